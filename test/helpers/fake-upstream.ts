import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the fake does with one request; behaviours are taken in order, then `ok` for good. */
export type Behaviour =
  | { kind: 'ok'; text?: string; toolCall?: { name: string; arguments: string } }
  | { kind: 'status'; status: number; message?: string; headers?: Record<string, string> }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'malformed' }
  /** Streams `after` content chunks, then drops the connection. */
  | { kind: 'cut'; after: number }
  /** Streams slowly: one chunk every `intervalMs`. */
  | { kind: 'slow'; intervalMs: number; chunks: number }
  /**
   * Answers with exactly these bytes (built with `openaiChunk`, `anthropicEvent` …): each step is written as
   * its own piece; `{ wait }` pauses, RESET destroys the connection, HANG stops without ending.
   */
  | { kind: 'raw'; status?: number; headers?: Record<string, string>; steps: RawStep[] }
  /**
   * Streams content chunks, each with the running usage (vLLM's `continuous_usage_stats`), as fast as the
   * reader takes them (respecting backpressure), up to `maxBytes`.
   */
  | { kind: 'flood'; maxBytes: number };

export type RawStep = string | Buffer | { wait: number } | { reset: true } | { hang: true };

/** Raw steps: drop the connection; stop sending without ending the answer. */
export const RESET: RawStep = { reset: true };
export const HANG: RawStep = { hang: true };

export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface FakeUpstream {
  url: string;
  received: Received[];
  /** Requests whose connection the gateway closed before the answer was complete. */
  aborted: number;
  /** TCP connections the gateway has opened to this server so far. */
  connections: number;
  /** Bytes a `flood` answer has written so far (the reader's backpressure bounds it). */
  flooded: number;
  script(...behaviours: Behaviour[]): void;
  close(): Promise<void>;
}

const WORDS = ['Hello', ' from', ' the', ' fake', ' upstream', '.'];

/**
 * A fake model server on a loopback port speaking the provider's documented wire format:
 * `openai` (POST /v1/chat/completions, SSE `data:` chunks ending in `[DONE]`, errors as {error:{message,type}})
 * or `anthropic` (POST /v1/messages, named SSE events message_start … message_stop, errors as {type:"error",error}).
 */
export async function startFakeUpstream(flavour: 'openai' | 'anthropic'): Promise<FakeUpstream> {
  const queue: Behaviour[] = [];
  const received: Received[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const state = { aborted: 0, connections: 0, flooded: 0 };
  const server: Server = createServer((request, response) => {
    response.on('close', () => {
      if (!response.writableFinished) state.aborted += 1;
    });
    let raw = '';
    request.on('data', (piece: Buffer) => (raw += piece.toString()));
    request.on('end', () => {
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
      received.push({ path: request.url ?? '', headers: request.headers, body });
      const behaviour = queue.shift() ?? { kind: 'ok' };
      if (behaviour.kind === 'raw') return void serveRaw(behaviour, response);
      if (behaviour.kind === 'flood') return void flood(behaviour.maxBytes, body, response, state);
      if (flavour === 'openai') serveOpenAI(behaviour, body, response);
      else serveAnthropic(behaviour, body, response);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    state.connections += 1;
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${flavour === 'openai' ? '/v1' : ''}`,
    received,
    get aborted() {
      return state.aborted;
    },
    get connections() {
      return state.connections;
    },
    get flooded() {
      return state.flooded;
    },
    script: (...behaviours) => void queue.push(...behaviours),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One OpenAI chat.completion.chunk event, as the API documents it (`data: {json}` and a blank line). */
export function openaiChunk(
  delta: object,
  options: { finish?: string | null; usage?: object | null; choices?: unknown[]; model?: string } = {},
): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-fake123',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: options.model ?? 'up-model',
    system_fingerprint: 'fp_fake',
    choices: options.choices ?? [{ index: 0, delta, logprobs: null, finish_reason: options.finish ?? null }],
    ...(options.usage !== undefined ? { usage: options.usage } : {}),
  })}\n\n`;
}

/** The in-band error event OpenAI-compatible servers send on a stream that already answered 200. */
export const openaiErrorEvent = (message: string, type = 'server_error'): string =>
  `data: ${JSON.stringify({ error: { message, type, param: null, code: null } })}\n\n`;

/** One Anthropic Messages stream event: `event: <type>` and `data: {"type": <type>, …}`. */
export const anthropicEvent = (name: string, data: object = {}): string =>
  `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;

/** Anthropic's message_start event, with the usage it documents (output_tokens starts at 1). */
export const anthropicStart = (inputTokens = 21): string =>
  anthropicEvent('message_start', {
    message: {
      id: 'msg_fake01',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude-test',
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1 },
    },
  });

export const anthropicText = (text: string): string =>
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

async function serveRaw(behaviour: Extract<Behaviour, { kind: 'raw' }>, response: ServerResponse) {
  response.writeHead(behaviour.status ?? 200, behaviour.headers ?? SSE_HEADERS);
  response.flushHeaders();
  for (const step of behaviour.steps) {
    if (response.destroyed) return;
    if (typeof step === 'object' && !Buffer.isBuffer(step)) {
      if ('hang' in step) return;
      if ('reset' in step) return void response.socket?.destroy();
      await new Promise((resolve) => setTimeout(resolve, step.wait));
      continue;
    }
    response.write(step);
    // Each step leaves in its own packet: a reader sees the pieces as they were cut.
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  response.end();
}

async function flood(
  maxBytes: number,
  body: any,
  response: ServerResponse,
  state: { flooded: number },
): Promise<void> {
  response.writeHead(200, SSE_HEADERS);
  // Usage on every chunk, as vLLM sends with `continuous_usage_stats`: the gateway bills from it and need
  // not count the tokens of megabytes of text.
  const piece = openaiChunk(
    { content: 'lorem ipsum '.repeat(340) },
    { model: body.model, usage: { prompt_tokens: 9, completion_tokens: 1000, total_tokens: 1009 } },
  );
  while (state.flooded < maxBytes && !response.destroyed) {
    state.flooded += piece.length;
    if (!response.write(piece)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          response.off('drain', done);
          response.off('close', done);
          resolve();
        };
        response.on('drain', done);
        response.on('close', done);
      });
    }
  }
  if (!response.destroyed) response.end('data: [DONE]\n\n');
}

function fail(
  behaviour: Behaviour,
  response: ServerResponse,
  errorBody: (status: number, message: string) => unknown,
): boolean {
  switch (behaviour.kind) {
    case 'status':
      response.writeHead(behaviour.status, { 'content-type': 'application/json', ...behaviour.headers });
      response.end(
        JSON.stringify(errorBody(behaviour.status, behaviour.message ?? `fake error ${behaviour.status}`)),
      );
      return true;
    case 'hang':
      return true;
    case 'reset':
      response.socket?.destroy();
      return true;
    case 'malformed':
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"id": "chatcmpl-broken", "choices": [');
      return true;
    default:
      return false;
  }
}

/**
 * Sends the final event, then ends the chunked body a moment later, in its own packet, as servers that
 * flush each event do: a client must read to the end, not stop at the final event, to keep the connection.
 */
function finish(response: ServerResponse, last: string): void {
  response.write(last);
  setTimeout(() => response.end(), 5);
}

const sse = (response: ServerResponse): void => {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
};

function pieces(behaviour: Behaviour): string[] {
  if (behaviour.kind === 'slow') return Array.from({ length: behaviour.chunks }, (_, i) => ` w${i}`);
  if (behaviour.kind === 'ok' && behaviour.text) return behaviour.text.split(/(?= )/);
  return WORDS;
}

async function drip(
  items: string[],
  write: (item: string, index: number) => void,
  behaviour: Behaviour,
  response: ServerResponse,
): Promise<boolean> {
  for (const [index, item] of items.entries()) {
    if (behaviour.kind === 'cut' && index === behaviour.after) {
      response.socket?.destroy();
      return false;
    }
    if (response.destroyed) return false;
    write(item, index);
    // A cut stream is paced so that its first chunks really leave before the connection drops.
    if (behaviour.kind === 'slow' || behaviour.kind === 'cut') {
      await new Promise((resolve) =>
        setTimeout(resolve, behaviour.kind === 'slow' ? behaviour.intervalMs : 5),
      );
    }
  }
  return true;
}

function serveOpenAI(behaviour: Behaviour, body: any, response: ServerResponse): void {
  if (
    fail(behaviour, response, (status, message) => ({
      error: {
        message,
        type: status >= 500 ? 'server_error' : 'invalid_request_error',
        param: null,
        code: null,
      },
    }))
  )
    return;
  const id = 'chatcmpl-fake123';
  const created = 1_700_000_000;
  const model = body.model;
  const toolCall = behaviour.kind === 'ok' ? behaviour.toolCall : undefined;
  const items = pieces(behaviour);
  const text = items.join('');
  const usage = {
    prompt_tokens: 11,
    completion_tokens: toolCall ? 7 : items.length,
    total_tokens: 11 + (toolCall ? 7 : items.length),
  };
  if (!body.stream) {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        id,
        object: 'chat.completion',
        created,
        model,
        system_fingerprint: 'fp_fake',
        choices: [
          {
            index: 0,
            message: toolCall
              ? {
                  role: 'assistant',
                  content: null,
                  tool_calls: [{ id: 'call_fake1', type: 'function', function: toolCall }],
                  refusal: null,
                }
              : { role: 'assistant', content: text, refusal: null },
            logprobs: null,
            finish_reason: toolCall ? 'tool_calls' : 'stop',
          },
        ],
        usage,
      }),
    );
    return;
  }
  const includeUsage = body.stream_options?.include_usage === true;
  const chunk = (delta: object, finish: string | null): string =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}) })}\n\n`;
  sse(response);
  response.write(chunk({ role: 'assistant', content: '', refusal: null }, null));
  if (toolCall) {
    // A streamed tool call: the first delta names it (index, id, type, name), the next ones carry its arguments.
    const call = {
      index: 0,
      id: 'call_fake1',
      type: 'function',
      function: { name: toolCall.name, arguments: '' },
    };
    response.write(chunk({ tool_calls: [call] }, null));
    const half = Math.ceil(toolCall.arguments.length / 2);
    for (const piece of [toolCall.arguments.slice(0, half), toolCall.arguments.slice(half)])
      response.write(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }, null));
    response.write(chunk({}, 'tool_calls'));
    if (includeUsage)
      response.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
      );
    return void finish(response, 'data: [DONE]\n\n');
  }
  void drip(items, (item) => response.write(chunk({ content: item }, null)), behaviour, response).then(
    (complete) => {
      if (!complete) return;
      response.write(chunk({}, 'stop'));
      if (includeUsage)
        response.write(
          `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
        );
      finish(response, 'data: [DONE]\n\n');
    },
  );
}

function serveAnthropic(behaviour: Behaviour, body: any, response: ServerResponse): void {
  const errorType = (status: number): string =>
    ({
      400: 'invalid_request_error',
      401: 'authentication_error',
      429: 'rate_limit_error',
      529: 'overloaded_error',
    })[status] ?? 'api_error';
  if (
    fail(behaviour, response, (status, message) => ({
      type: 'error',
      error: { type: errorType(status), message },
    }))
  )
    return;
  const id = 'msg_fake01';
  const toolCall = behaviour.kind === 'ok' ? behaviour.toolCall : undefined;
  const items = pieces(behaviour);
  const usage = {
    input_tokens: 21,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: toolCall ? 9 : items.length,
  };
  if (!body.stream) {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        id,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: toolCall
          ? [
              {
                type: 'tool_use',
                id: 'toolu_fake1',
                name: toolCall.name,
                input: JSON.parse(toolCall.arguments),
              },
            ]
          : [{ type: 'text', text: items.join('') }],
        stop_reason: toolCall ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        usage,
      }),
    );
    return;
  }
  const event = (name: string, data: object): string =>
    `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  sse(response);
  response.write(
    event('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        content: [],
        model: body.model,
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
  );
  if (toolCall) {
    response.write(
      event('content_block_start', {
        index: 0,
        content_block: { type: 'tool_use', id: 'toolu_fake1', name: toolCall.name, input: {} },
      }),
    );
    response.write(
      event('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '' } }),
    );
    response.write(
      event('content_block_delta', {
        index: 0,
        delta: { type: 'input_json_delta', partial_json: toolCall.arguments },
      }),
    );
    response.write(event('content_block_stop', { index: 0 }));
    response.write(
      event('message_delta', {
        delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { output_tokens: usage.output_tokens },
      }),
    );
    finish(response, event('message_stop', {}));
    return;
  }
  response.write(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
  response.write(event('ping', {}));
  void drip(
    items,
    (item) =>
      response.write(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: item } })),
    behaviour,
    response,
  ).then((complete) => {
    if (!complete) return;
    response.write(event('content_block_stop', { index: 0 }));
    response.write(
      event('message_delta', {
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage.output_tokens },
      }),
    );
    finish(response, event('message_stop', {}));
  });
}
