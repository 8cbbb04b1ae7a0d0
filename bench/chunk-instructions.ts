// Instructions per relayed chunk of our own per-chunk code, counted by callgrind (load-independent): each checkout's
// SseByteScanner, the OpenAI chunk scan (ChunkScanner), the relay's RawText and the chat-completions sink's
// passThrough, on upstream reads of `--chunks=N` (default 100) mock content chunks each, handed over as undici does
// (one view per event). No sockets, no undici: what is ours per chunk. `node bench/chunk-instructions.ts --build=DIR …`
// (default: this checkout), `--reads=N` (default 400). Each build runs twice under callgrind, with N and 2N reads;
// the difference of the totals is N reads' (start-up cancels out).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const option = (name: string): string[] =>
  process.argv.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
const ROOT = new URL('..', import.meta.url).pathname;
const CHUNKS = Number(option('chunks')[0] ?? 100);
const READS = Number(option('reads')[0] ?? 400);

/** The measured loop itself, in the child: `--child=ROOT`, `--count=N`. */
async function child(root: string, count: number): Promise<void> {
  const { SseByteScanner } = await import(`${root}/src/providers/sse.ts`);
  const { ChunkScanner } = await import(`${root}/src/providers/openai/scan-chunk.ts`);
  // A checkout from before the request vocabulary moved to src/core keeps it in src/gateway.
  const { RawChunk, RawText } = await import(
    existsSync(`${root}/src/core/raw-chunk.ts`)
      ? `${root}/src/core/raw-chunk.ts`
      : `${root}/src/gateway/raw-chunk.ts`
  );
  const { chatCompletionsSink } = await import(`${root}/src/http/sse-sink.ts`);
  let written = 0;
  const text = {
    open() {},
    write: (data: Buffer | string) => ((written += data.length), true),
    drain: () => Promise.resolve(),
    end() {},
    closed: false,
    onClose() {},
  };
  const chunk = (i: number): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created: 1700000000, model: 'mock-model', choices: [{ index: 0, delta: { content: ` t${i}` }, logprobs: null, finish_reason: null }] })}\n\n`;
  const pieces = Array.from({ length: CHUNKS }, (_, i) => chunk(i));
  const read = Buffer.from(pieces.join(''));
  const offsets: number[] = [];
  for (let i = 0, at = 0; i < CHUNKS; i++) {
    const length = Buffer.byteLength(pieces[i]!);
    offsets.push(at, length);
    at += length;
  }
  const DONE = Buffer.from('[DONE]');
  for (let n = 0; n < count; n++) {
    const scanner = new SseByteScanner();
    const chunks = new ChunkScanner();
    const sink = chatCompletionsSink(text, false, 'model-b');
    const rawText = new RawText();
    const batch: unknown[] = [];
    const onEvent = (data: Buffer): boolean => {
      if (data.length === DONE.length && data.equals(DONE)) return false;
      batch.push(chunks.scan(data));
      return true;
    };
    // As undici hands the pieces of one read over: a view of the read each.
    for (let i = 0; i < offsets.length; i += 2)
      scanner.push(Buffer.from(read.buffer, read.byteOffset + offsets[i]!, offsets[i + 1]), onEvent);
    for (const raw of batch) if (raw instanceof RawChunk) rawText.add(raw);
    sink.passThrough(batch, 'model-b');
    rawText.take();
  }
  if (written === 0) throw new Error('nothing written');
}

function instructions(root: string, count: number, out: string): number {
  execFileSync(
    'valgrind',
    [
      '--tool=callgrind',
      '--smc-check=all-non-file',
      `--callgrind-out-file=${out}`,
      process.execPath,
      new URL(import.meta.url).pathname,
      `--child=${root}`,
      `--count=${count}`,
      `--chunks=${CHUNKS}`,
    ],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );
  return Number(/^totals: (\d+)/m.exec(readFileSync(out, 'utf8'))![1]);
}

const childRoot = option('child')[0];
if (childRoot !== undefined) await child(childRoot, Number(option('count')[0]));
else {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-chunk-callgrind-'));
  try {
    console.log(`| build | instructions per chunk (${CHUNKS} chunks a read, ${READS} reads) |\n|---|---:|`);
    for (const root of option('build').length > 0 ? option('build') : [ROOT]) {
      const short = instructions(root, READS, join(dir, 'short'));
      const long = instructions(root, 2 * READS, join(dir, 'long'));
      const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).toString().trim();
      console.log(`| ${commit} ${root} | ${((long - short) / (READS * CHUNKS)).toFixed(0)} |`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
