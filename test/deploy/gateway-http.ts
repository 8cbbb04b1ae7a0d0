import assert from 'node:assert/strict';

/** Polls GET /health until it answers 200; resolves to the milliseconds it took. */
export async function waitHealthy(base: string, timeoutMs = 60_000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    try {
      if ((await fetch(`${base}/health`, { signal: AbortSignal.timeout(2_000) })).status === 200)
        return performance.now() - started;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${base}/health did not answer 200 within ${timeoutMs} ms`);
}

export interface Registered {
  accountId: string;
  keyId: string;
  key: string;
}

export async function register(base: string, email: string): Promise<Registered> {
  const response = await fetch(`${base}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery staple' }),
  });
  const body = (await response.json()) as { account: { id: string }; api_key: { id: string; key: string } };
  assert.equal(response.status, 201, JSON.stringify(body));
  return { accountId: body.account.id, keyId: body.api_key.id, key: body.api_key.key };
}

const chatRequest = (key: string, stream: boolean): RequestInit => ({
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({
    model: 'model-a',
    stream,
    messages: [{ role: 'user', content: 'Tell me a story' }],
  }),
});

/** A non-streamed completion; resolves to the HTTP status (and checks the answer's shape on 200). */
export async function chat(base: string, key: string): Promise<number> {
  const response = await fetch(`${base}/v1/chat/completions`, chatRequest(key, false));
  const body = (await response.json()) as { choices?: { message?: { content?: string } }[] };
  if (response.status === 200) assert.ok(body.choices?.[0]?.message?.content, JSON.stringify(body));
  return response.status;
}

/** A streamed completion read to its end: the number of content chunks, and whether `data: [DONE]` came. */
export async function stream(base: string, key: string): Promise<{ chunks: number; done: boolean }> {
  const response = await fetch(`${base}/v1/chat/completions`, chatRequest(key, true));
  assert.equal(response.status, 200, await response.clone().text());
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  const text = await response.text();
  const events = text.split('\n\n').filter((event) => event.startsWith('data: '));
  const chunks = events.filter((event) => event.includes('"content"')).length;
  return { chunks, done: events.at(-1)?.trim() === 'data: [DONE]' };
}

/** The dashboard's page: the built single-page app, not the "not built" 503. */
export async function dashboard(base: string): Promise<void> {
  const response = await fetch(`${base}/`);
  const html = await response.text();
  assert.equal(response.status, 200, html);
  assert.match(html, /<script type="module"[^>]* src="\/assets\/index-[\w-]+\.js"/);
  const script = /src="(\/assets\/index-[\w-]+\.js)"/.exec(html)?.[1] ?? '';
  assert.equal((await fetch(`${base}${script}`)).status, 200, `${script} is served`);
}
