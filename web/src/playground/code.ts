// The playground's request as code to copy: curl, Python and TypeScript with the official `openai` clients,
// against this site's base URL, with the key read from TOLLGATE_API_KEY (never the user's secret itself).

export const KEY_VARIABLE = 'TOLLGATE_API_KEY';

export type Language = 'curl' | 'python' | 'typescript';

/** A string as one single-quoted shell word. */
const shellQuote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`;

export function curlCode(baseUrl: string, body: Record<string, unknown>): string {
  return [
    `curl ${shellQuote(`${baseUrl}/chat/completions`)} \\`,
    `  -H "Authorization: Bearer $${KEY_VARIABLE}" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d ${shellQuote(JSON.stringify(body, null, 2))}`,
  ].join('\n');
}

/** A JSON value as Python source (JSON's true/false/null spelled as Python's). */
function pythonValue(value: unknown, indent: string): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  const inner = `${indent}    `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => inner + pythonValue(v, inner)).join(',\n')},\n${indent}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return '{}';
    return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pythonValue(v, inner)}`).join(',\n')},\n${indent}}`;
  }
  return JSON.stringify(value);
}

export function pythonCode(baseUrl: string, body: Record<string, unknown>): string {
  const args = Object.entries(body)
    .map(([k, v]) => `    ${k}=${pythonValue(v, '    ')},`)
    .join('\n');
  return [
    'import os',
    'from openai import OpenAI',
    '',
    `client = OpenAI(base_url=${JSON.stringify(baseUrl)}, api_key=os.environ[${JSON.stringify(KEY_VARIABLE)}])`,
    '',
    'stream = client.chat.completions.create(',
    args,
    ')',
    'for chunk in stream:',
    '    if chunk.choices and chunk.choices[0].delta.content:',
    '        print(chunk.choices[0].delta.content, end="")',
    '    if chunk.usage:',
    '        print("\\n", chunk.usage)',
  ].join('\n');
}

export function typescriptCode(baseUrl: string, body: Record<string, unknown>): string {
  const params = JSON.stringify(body, null, 2);
  return [
    "import OpenAI from 'openai';",
    '',
    `const client = new OpenAI({ baseURL: ${JSON.stringify(baseUrl)}, apiKey: process.env[${JSON.stringify(KEY_VARIABLE)}] });`,
    '',
    `const stream = await client.chat.completions.create(${params});`,
    'for await (const chunk of stream) {',
    "  process.stdout.write(chunk.choices[0]?.delta?.content ?? '');",
    "  if (chunk.usage) console.log('\\n', chunk.usage);",
    '}',
  ].join('\n');
}

export const CODE: Record<
  Language,
  { label: string; make: (baseUrl: string, body: Record<string, unknown>) => string }
> = {
  curl: { label: 'curl', make: curlCode },
  python: { label: 'Python', make: pythonCode },
  typescript: { label: 'TypeScript', make: typescriptCode },
};
