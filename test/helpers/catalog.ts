import assert from 'node:assert/strict';
import { BACKENDS, type OpenedBackend } from './backends.ts';
import { startFakeOpenAI } from '../../src/providers/openai/fake-openai.ts';
import { startFakeAnthropic } from '../../src/providers/anthropic/fake-anthropic.ts';
import type { FakeUpstream } from '../../src/providers/fake-upstream.ts';
import { startTestServer, type TestServer } from './server.ts';

/** Timeouts of the catalog's gateways: short, so a hang costs a fraction of a second. */
export const FIRST_BYTE_MS = 300;
export const IDLE_MS = 300;

/**
 * A gateway over embedded SQLite with two fake upstreams: `model-b` on an OpenAI-type one (`openai`),
 * `model-a` on an Anthropic one (`anthropic`). Two attempts per request, a breaker that never opens (each
 * scenario must stand alone), and one Pro account with its key.
 */
export interface Catalog {
  server: TestServer;
  opened: OpenedBackend;
  openai: FakeUpstream;
  anthropic: FakeUpstream;
  key: string;
  accountId: string;
  /** Process-level faults seen while the catalog ran (uncaught exceptions, unhandled rejections). */
  faults: unknown[];
  close(): Promise<void>;
}

export async function startCatalog(): Promise<Catalog> {
  const faults: unknown[] = [];
  // Any error that escapes every handler during the catalog is a failure of the guarantee under test.
  const onFault = (error: unknown): void => void faults.push(error);
  process.on('uncaughtException', onFault);
  process.on('unhandledRejection', onFault);
  const opened = await BACKENDS[0]!.open();
  const [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
  const server = await startTestServer({
    backend: opened,
    yaml: {
      providers: [
        { id: 'up', type: 'openai', base_url: openai.url },
        { id: 'claude', type: 'anthropic', base_url: anthropic.url },
      ],
      models: {
        'model-a': { deployments: [{ provider: 'claude', model: 'claude-test' }] },
        'model-b': { deployments: [{ provider: 'up', model: 'up-b' }] },
      },
      timeouts: { connect_ms: 500, first_byte_ms: FIRST_BYTE_MS, idle_stream_ms: IDLE_MS },
      routing: {
        max_attempts: 2,
        retry_base_ms: 5,
        retry_max_ms: 50,
        breaker_failure_threshold: 1000,
        breaker_cooldown_ms: 1000,
      },
    },
  });
  const registered = await server.registerOn('pro');
  return {
    server,
    opened,
    openai,
    anthropic,
    key: registered.key,
    accountId: registered.accountId,
    faults,
    async close() {
      await server.close();
      await Promise.all([openai.close(), anthropic.close()]);
      await opened.cleanup();
      process.off('uncaughtException', onFault);
      process.off('unhandledRejection', onFault);
    },
  };
}

export interface Answer {
  status: number;
  requestId: string;
  contentType: string;
  text: string;
  /** The SSE events of a stream (each event's text without its blank line). */
  events: string[];
  /** The JSON body, when the answer is JSON. */
  body: any;
}

/** POSTs a chat request with fetch (a real socket) and reads the whole answer. */
export async function chat(c: Catalog, body: Record<string, unknown>): Promise<Answer> {
  const response = await fetch(`${c.server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  let parsed: unknown;
  if (contentType.startsWith('application/json')) parsed = JSON.parse(text);
  return {
    status: response.status,
    requestId: response.headers.get('x-request-id') ?? '',
    contentType,
    text,
    events: text.split('\n\n').filter(Boolean),
    body: parsed,
  };
}

/** The usage record the gateway wrote for a request, once settlements are flushed. */
export async function recordOf(c: Catalog, requestId: string): Promise<any> {
  await c.server.services.settlements.flush();
  return c.opened.db.get('SELECT * FROM usage_records WHERE request_id = $1', [requestId]);
}

/** Asserts the account holds no credit for a request any more (every hold was released). */
export async function assertNoHold(c: Catalog): Promise<void> {
  await c.server.services.settlements.flush();
  assert.equal(await c.server.services.holds.heldMicros(c.accountId), 0, 'no credit is still held');
  const balance = await c.server.services.store.ledger.balance(c.accountId, Date.now());
  assert.equal(balance.heldMicros, 0, 'the ledger holds nothing');
}

/** A stream that failed after its first byte: 200, content, then exactly one error event, and no [DONE]. */
export function assertMidStreamError(answer: Answer): void {
  assert.equal(answer.status, 200);
  const errors = answer.events.filter((event) => event.startsWith('data: {"error"'));
  assert.equal(errors.length, 1, `one error event in ${JSON.stringify(answer.events)}`);
  assert.equal(answer.events.at(-1), errors[0], 'the error event is the last one');
  const error = JSON.parse(errors[0]!.slice('data: '.length)).error;
  assert.equal(error.code, 'provider_error');
  assert.equal(error.type, 'api_error');
  assert.ok(!answer.events.includes('data: [DONE]'));
}

/** A failure before the first byte that routing could not save: the spec's 502 provider_error object. */
export function assertProviderError(answer: Answer): void {
  assert.equal(answer.status, 502, answer.text);
  assert.match(answer.contentType, /^application\/json/);
  assert.equal(answer.body.error.code, 'provider_error');
  assert.equal(answer.body.error.type, 'api_error');
}

/** The text a stream delivered, from its chunks. */
export function streamedText(answer: Answer): string {
  let text = '';
  for (const event of answer.events) {
    if (!event.startsWith('data: {')) continue;
    const chunk = JSON.parse(event.slice('data: '.length));
    text += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return text;
}

/** The very next request on the same gateway succeeds, streamed and not, on both models. */
export async function assertNextSucceeds(c: Catalog, model: string): Promise<void> {
  const streamed = await chat(c, { model, stream: true });
  assert.equal(streamed.status, 200, streamed.text);
  assert.equal(streamed.events.at(-1), 'data: [DONE]');
  assert.equal(streamedText(streamed), 'Hello from the fake upstream.');
  const whole = await chat(c, { model });
  assert.equal(whole.status, 200, whole.text);
  assert.equal(whole.body.choices[0].message.content, 'Hello from the fake upstream.');
  assert.deepEqual(c.faults, [], 'no error reached the process handlers');
}
