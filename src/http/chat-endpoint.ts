import type { IncomingMessage, ServerResponse } from 'node:http';
import { requestScope } from '../observability/process-faults.ts';
import type { Services } from './app-services.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { HEAVY, runSliced, type Yielded } from '../shared/sliced-work.ts';
import { bearerToken } from './auth-hook.ts';
import { createClientAddress } from './client-address.ts';
import { countJsonValues } from './count-json-values.ts';
import { answerHeaders } from './answer-headers.ts';
import { completionJson } from '../gateway/upstream-json.ts';
import { errorHeaders, isLogged, toGatewayError } from './error-handler.ts';
import { asUser } from './routes/principal.ts';
import { PLAYGROUND_PATH, playgroundCaller } from './playground-door.ts';
import { chatCompletionsSink, createSseSink } from './sse-sink.ts';
import type { Exchange, FrontDoor } from './front-door.ts';
import { messagesDoor, countTokensDoor } from './messages-door.ts';
import { RESPONSES_PATH, responsesDoor, responsesNotStored } from './responses-door.ts';

export const CHAT_PATH = '/v1/chat/completions';

/** Chat completions: the canonical form itself; nothing to translate (and nothing made per request but the body). */
const chatStreamSink: Exchange['streamSink'] = (text, admitted) =>
  chatCompletionsSink(text, admitted.request.includeUsage, admitted.request.model);
const chatAnswer: Exchange['answer'] = (completion) => completion;
const chatDoor: FrontDoor = {
  token: (req) => bearerToken(req.headers.authorization),
  idHeaders: (requestId) => ({ 'x-request-id': requestId }),
  exchange: (body) => ({ chatBody: body, streamSink: chatStreamSink, answer: chatAnswer }),
  errorBody: (error) => error.toBody(),
};
const playgroundDoor: FrontDoor = { ...chatDoor, caller: playgroundCaller };

/** Every front door by its POST path. */
const DOORS: ReadonlyMap<string, FrontDoor> = new Map([
  [CHAT_PATH, chatDoor],
  [RESPONSES_PATH, responsesDoor],
  ['/v1/messages', messagesDoor],
  ['/v1/messages/count_tokens', countTokensDoor],
  [PLAYGROUND_PATH, playgroundDoor],
]);
export const FRONT_DOOR_PATHS: readonly string[] = [...DOORS.keys()];

export interface ChatEndpointOptions {
  services: Services;
  nextRequestId(): string;
  /** True once the server is draining: new requests get 503, as Fastify's own routes do. */
  closing(): boolean;
}

/**
 * POST /v1/chat/completions on node:http directly, ahead of Fastify's router: every model call takes this
 * route, and Fastify's hooks, body parser and reply pipeline cost more CPU than the rest of our HTTP work
 * (docs/performance.md). It answers exactly as a Fastify route would: same ids, errors, limits and headers.
 * Returns false for any other request, which the caller hands to Fastify.
 */
export function createChatEndpoint(
  options: ChatEndpointOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const clientIp = createClientAddress(options.services.config.trustProxy);
  return (req, res) => {
    const url = req.url ?? '';
    const door = req.method === 'POST' ? DOORS.get(pathOf(url)) : undefined;
    if (door === undefined) {
      if (!url.startsWith(`${RESPONSES_PATH}/`)) return false;
      // A stored response asked for by id: Tollgate stores none (store is treated as false).
      const requestId = options.nextRequestId();
      const failure = responsesNotStored();
      sendJson(res, failure.status, { 'x-request-id': requestId }, failure.toBody());
      return true;
    }
    const requestId = options.nextRequestId();
    void requestScope.run(
      requestId,
      serveChat,
      options,
      door,
      clientIp,
      req,
      res,
      performance.now(),
      requestId,
    );
    return true;
  };
}

const pathOf = (url: string): string => {
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
};

async function serveChat(
  options: ChatEndpointOptions,
  door: FrontDoor,
  clientIp: (peer: string, forwardedFor: string | undefined) => string,
  req: IncomingMessage,
  res: ServerResponse,
  arrivedAt: number,
  requestId: string,
): Promise<void> {
  const { services } = options;
  // Counting tokens calls no model: it is not traced.
  const trace =
    services.tracing && door !== countTokensDoor
      ? services.tracing.start(req.headers, pathOf(req.url ?? ''), requestId, arrivedAt)
      : undefined;
  try {
    if (options.closing()) {
      res.setHeader('connection', 'close');
      throw new GatewayError('service_unavailable', 'the server is shutting down; retry on another instance');
    }
    const token = door.token(req);
    const ip = clientIp(req.socket.remoteAddress ?? '', forwardedFor(req.headers['x-forwarded-for']));
    // A cached key is answered in this call; only a first use waits for the store.
    const { key, account } = door.caller
      ? await door.caller(req, services)
      : asUser(
          // authenticateNow refused a missing token, so a miss has one.
          services.accounts.authenticateNow(token, ip) ??
            (await services.accounts.authenticateStored(token!, ip)),
        );
    const body = await readJsonBody(req, services.config.bodyLimitBytes);
    const exchange = door.exchange(body);
    const ctx = { requestId, key, account, arrivedAt, trace };
    if (exchange.countOnly !== undefined) {
      const tokens = await services.gateway.countPrompt(ctx, exchange.chatBody);
      sendJson(res, 200, door.idHeaders(requestId), exchange.countOnly(tokens));
      return;
    }
    const admitted = await services.gateway.admit(ctx, exchange.chatBody);
    if (admitted.request.stream) {
      const text = createSseSink(res, door.idHeaders(requestId));
      await services.gateway.stream(admitted, exchange.streamSink(text, admitted));
      return;
    }
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const answered = await services.gateway.complete(admitted, abort.signal);
    const headers = Object.assign(answerHeaders(answered), door.idHeaders(requestId));
    // Chat completions answer with the completion itself: the upstream's own JSON text where it was kept.
    if (door === chatDoor || door === playgroundDoor)
      sendJsonText(res, 200, headers, completionJson(answered.completion));
    else sendJsonText(res, 200, headers, JSON.stringify(exchange.answer(answered.completion, admitted)));
  } catch (error) {
    const failure = toGatewayError(error);
    trace?.failed(failure.code, failure.status);
    if (isLogged(failure)) services.logger.error({ err: error, reqId: requestId }, 'request failed');
    if (res.headersSent || res.destroyed) {
      // A stream already open ends its own way (the gateway writes the error event); anything else is cut.
      if (!res.writableEnded) res.destroy();
      return;
    }
    sendJson(
      res,
      failure.status,
      { ...errorHeaders(failure), ...door.idHeaders(requestId) },
      door.errorBody(failure, requestId),
    );
  } finally {
    trace?.end();
  }
}

/** Writes `value` as the whole JSON answer, in one write with its headers. */
function sendJson(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  value: unknown,
): void {
  sendJsonText(res, status, { ...headers }, JSON.stringify(value));
}

/** Writes `json` as the whole answer, in one write with its headers; `headers` is a new map of the caller's, added to. */
function sendJsonText(
  res: ServerResponse,
  status: number,
  headers: Record<string, string | number>,
  json: string,
): void {
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['x-content-type-options'] = 'nosniff';
  headers['content-length'] = Buffer.byteLength(json);
  res.writeHead(status, headers);
  res.end(json);
}

/** X-Forwarded-For as one list: repeated headers are joined in order, as proxies read them. */
const forwardedFor = (header: string | string[] | undefined): string | undefined =>
  Array.isArray(header) ? header.join(',') : header;

/**
 * Reads and parses a JSON body of at most `limitBytes`; undefined when there is none. A body over the limit
 * is answered at once (413) and the rest read off and dropped, so the connection stays usable.
 */
function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  const hasBody = req.headers['transfer-encoding'] !== undefined || declared > 0;
  if (!hasBody) {
    if (req.headers['content-type'] !== undefined && isJsonType(req.headers['content-type']))
      return Promise.reject(new GatewayError('invalid_request', 'request body is empty'));
    return Promise.resolve(undefined);
  }
  if (!isJsonType(req.headers['content-type'] ?? ''))
    return Promise.reject(
      new GatewayError('invalid_request', 'Content-Type must be application/json', { status: 415 }),
    );
  if (declared > limitBytes) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  // Usually the whole body came in the packets that brought the headers: it is taken off the stream now,
  // without waiting for its data and end events.
  if (req.complete) {
    const chunks: Buffer[] = [];
    let length = 0;
    for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) {
      chunks.push(chunk);
      length += chunk.length;
    }
    if (length > limitBytes) return Promise.reject(tooLarge());
    if (length < LARGE_BODY_BYTES) return parseJsonBody(chunks, length);
    return parseLargeJsonBody(chunks, length);
  }
  // Past the limit, what still arrives is read and dropped: the connection stays usable after the 413.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    req.on('data', (chunk: Buffer) => {
      if (length > limitBytes) return;
      length += chunk.length;
      if (length <= limitBytes) return void chunks.push(chunk);
      chunks.length = 0;
      reject(tooLarge());
    });
    req.on('error', reject);
    req.on('end', () => {
      if (length > limitBytes) return;
      if (length >= LARGE_BODY_BYTES) return void parseLargeJsonBody(chunks, length).then(resolve, reject);
      // A small body is parsed here, in the end event's own call: no promise of its own to settle this one.
      try {
        resolve(parseSmallBody(chunks, length));
      } catch (error) {
        reject(asError(error));
      }
    });
  });
}

/**
 * Bodies from this size on are checked, joined, decoded and parsed one step at a time, under the budget that
 * every request's heavy work shares (shared/sliced-work.ts): each step of a 4 MiB body takes milliseconds.
 */
const LARGE_BODY_BYTES = 256 * 1024;

/**
 * The most JSON values (objects, arrays, items) a large body may hold: a parse's time grows with them, and at this
 * many small objects it is about 10 ms. Far above any real request (2,048 messages are about 6,000 values).
 */
const MAX_JSON_VALUES = 65_536;

/** A large body: its values counted first (a cheap scan), so that no single parse can hold the loop for long. */
function parseLargeJsonBody(chunks: Buffer[], length: number): Promise<unknown> {
  return promised(() => runSliced(largeBodySteps(chunks, length)));
}

/** Each step takes milliseconds for a body of megabytes, so each gets a budget of its own. */
function* largeBodySteps(chunks: Buffer[], length: number): Generator<Yielded, unknown> {
  yield HEAVY;
  if (countJsonValues(chunks, MAX_JSON_VALUES) > MAX_JSON_VALUES)
    throw new GatewayError(
      'invalid_request',
      `the request body holds more than ${MAX_JSON_VALUES} JSON values (objects, arrays and items), the limit`,
    );
  yield HEAVY;
  const whole = joined(chunks, length);
  yield HEAVY;
  const text = whole.toString();
  yield HEAVY;
  return parseJson(text);
}

/** The body's bytes as JSON; a 400 naming the syntax error if they are not. */
const parseSmallBody = (chunks: Buffer[], length: number): unknown =>
  parseJson(joined(chunks, length).toString());

/** parseSmallBody as a promise. */
function parseJsonBody(chunks: Buffer[], length: number): Promise<unknown> {
  return promised(() => parseSmallBody(chunks, length));
}

/** The body's pieces as one buffer (the piece itself when there is one). */
const joined = (chunks: Buffer[], length: number): Buffer =>
  chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);

/** What `produce` returns, or the error it throws, as a promise. */
function promised<T>(produce: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(produce());
  } catch (error) {
    return Promise.reject(asError(error));
  }
}

/** What was thrown, as an Error (a promise is rejected with nothing else). */
const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new GatewayError('invalid_request', `request body is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

const tooLarge = (): GatewayError =>
  new GatewayError('invalid_request', 'request body is too large', { status: 413 });

/** application/json, with or without parameters (charset), in any case. */
function isJsonType(contentType: string): boolean {
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json';
}
