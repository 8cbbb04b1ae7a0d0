import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

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
   * OpenAI's fake only: streams content chunks, each with the running usage (vLLM's `continuous_usage_stats`), as fast as the
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

/** One provider's wire format for the fake server: where its API root is, and how it answers a request. */
export interface FakeWire {
  /** The path `url` ends with (`/v1` for OpenAI's API root, empty for Anthropic's). */
  root: string;
  serve(behaviour: Behaviour, body: any, response: ServerResponse, state: { flooded: number }): void;
}

/**
 * A fake model server on a loopback port speaking one provider's documented wire format (`startFakeOpenAI`
 * in openai/fake-openai.ts, `startFakeAnthropic` in anthropic/fake-anthropic.ts); `raw` answers are the same
 * for every wire.
 */
export async function startFakeUpstream(wire: FakeWire): Promise<FakeUpstream> {
  const queue: Behaviour[] = [];
  const received: Received[] = [];
  const state = { aborted: 0, flooded: 0 };
  const server = await listenFake((request, body, response) => {
    response.on('close', () => {
      if (!response.writableFinished) state.aborted += 1;
    });
    received.push({ path: request.url ?? '', headers: request.headers, body });
    const behaviour = queue.shift() ?? { kind: 'ok' };
    if (behaviour.kind === 'raw') return void serveRaw(behaviour, response);
    wire.serve(behaviour, body, response, state);
  });
  return {
    url: `${server.origin}${wire.root}`,
    received,
    get aborted() {
      return state.aborted;
    },
    get connections() {
      return server.connections;
    },
    get flooded() {
      return state.flooded;
    },
    script: (...behaviours) => void queue.push(...behaviours),
    close: () => server.close(),
  };
}

/** A fake server listening on a loopback port. */
export interface FakeServer {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** TCP connections opened to it so far. */
  readonly connections: number;
  /** Drops every open connection and stops listening. */
  close(): Promise<void>;
}

/** Listens on a free loopback port and hands `handle` each request with its body (parsed JSON, else the text). */
export async function listenFake(
  handle: (request: IncomingMessage, body: any, response: ServerResponse) => void,
): Promise<FakeServer> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((request, response) => {
    let raw = '';
    request.on('data', (piece: Buffer) => (raw += piece.toString()));
    request.on('end', () => {
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
      handle(request, body, response);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    connections += 1;
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get connections() {
      return connections;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const SSE_HEADERS = {
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

export function fail(
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
export function finish(response: ServerResponse, last: string): void {
  response.write(last);
  setTimeout(() => response.end(), 5);
}

export const sse = (response: ServerResponse): void => {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
};

/** The words an `ok` answer streams, one per chunk. */
const WORDS = ['Hello', ' from', ' the', ' fake', ' upstream', '.'];

export function pieces(behaviour: Behaviour): string[] {
  if (behaviour.kind === 'slow') return Array.from({ length: behaviour.chunks }, (_, i) => ` w${i}`);
  if (behaviour.kind === 'ok' && behaviour.text) return behaviour.text.split(/(?= )/);
  return WORDS;
}

export async function drip(
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
