/**
 * The simulator's embedding of a text: hashed character trigrams and words, each adding ±1 to one of `dimensions`
 * slots, normalised to unit length. The same text always gives the same vector, and texts that share words and
 * spellings share slots, so similar texts are closer (by cosine) than unrelated ones: a retrieval demo works
 * offline. Case and runs of whitespace do not matter.
 */
export function simulatedEmbedding(text: string, dimensions: number): number[] {
  const vector = new Float64Array(dimensions);
  const normal = text.toLowerCase().replace(/\s+/g, ' ').trim();
  const add = (feature: string, weight: number): void => {
    const hash = fnv1a(feature);
    // The lowest bit picks the sign, so unrelated features cancel out on average instead of piling up.
    vector[(hash >>> 1) % dimensions]! += hash & 1 ? weight : -weight;
  };
  const padded = ` ${normal} `;
  for (let at = 0; at + 3 <= padded.length; at++) add(`c:${padded.slice(at, at + 3)}`, 1);
  for (const word of normal.split(/[^\p{L}\p{N}]+/u)) if (word !== '') add(`w:${word}`, 2);
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  // An input with nothing to hash (only punctuation, say) still gets a unit vector: its own fixed direction.
  if (norm === 0) {
    vector[fnv1a(`empty:${normal}`) % dimensions] = 1;
    norm = 1;
  }
  return Array.from(vector, (value) => value / norm);
}

/** 32-bit FNV-1a over the string's UTF-16 code units: cheap, stable across runs and machines. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}
