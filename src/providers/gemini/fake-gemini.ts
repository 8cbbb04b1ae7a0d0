import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenFake } from '../fake-upstream.ts';
import { schemaInstance } from '../simulator/schema-instance.ts';
import { serveGeminiEmbeddings } from '../fake-embeddings.ts';

/** What the fake does with one request; behaviours are taken in order, then `ok`. */
export type GeminiBehaviour =
  /** Answers like a model: a function call when tools are offered and no result came back yet, else text or JSON. */
  | { kind: 'ok'; text?: string }
  | { kind: 'status'; status: number; message?: string }
  /** A candidate stopped by the named finish reason (SAFETY, RECITATION, MAX_TOKENS …). */
  | { kind: 'finish'; reason: string; text?: string }
  /** The prompt itself blocked: no candidates, `promptFeedback.blockReason`. */
  | { kind: 'blocked'; reason: string }
  /** Streams `after` events, then drops the connection. */
  | { kind: 'cut'; after: number }
  /** A 200 whose body (or, streamed, whose second event) is not JSON. */
  | { kind: 'malformed' };

export interface GeminiReceived {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface FakeGemini {
  /** The API root with its version, as `base_url` takes it. */
  url: string;
  received: GeminiReceived[];
  script(...behaviours: GeminiBehaviour[]): void;
  close(): Promise<void>;
}

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/**
 * A fake Gemini API on a loopback port, in its documented wire format: `POST /v1beta/models/{model}:generateContent`
 * answers a GenerateContentResponse (candidates[].content.parts, finishReason, usageMetadata, modelVersion,
 * responseId); `:streamGenerateContent?alt=sse` sends the same objects as `data:` events, the last one with
 * the finish reason and the full usage, and then ends the body (no [DONE]). Errors are
 * `{"error":{"code","message","status"}}`. The key must come in `x-goog-api-key`.
 */
export async function startFakeGemini(apiKey: string): Promise<FakeGemini> {
  const queue: GeminiBehaviour[] = [];
  const received: GeminiReceived[] = [];
  const server = await listenFake((request, body, response) => {
    received.push({ path: request.url ?? '', headers: request.headers, body });
    const match =
      /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)(\?alt=sse)?$/.exec(
        request.url ?? '',
      );
    if (!match) return sendError(response, 404, `path ${request.url} not found`);
    if (request.headers['x-goog-api-key'] !== apiKey)
      return sendError(response, 400, 'API key not valid. Please pass a valid API key.');
    const behaviour = queue.shift() ?? { kind: 'ok' };
    if (match[2] === 'embedContent' || match[2] === 'batchEmbedContents') {
      if (behaviour.kind === 'status')
        return sendError(response, behaviour.status, behaviour.message ?? `fake error ${behaviour.status}`);
      return serveGeminiEmbeddings(match[2], body, response);
    }
    serve(behaviour, decodeURIComponent(match[1]!), match[2] === 'streamGenerateContent', body, response);
  });
  return {
    url: `${server.origin}/v1beta`,
    received,
    script: (...behaviours) => void queue.push(...behaviours),
    close: () => server.close(),
  };
}

function sendError(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  response.end(
    JSON.stringify({ error: { code: status, message, status: STATUS_NAMES[status] ?? 'UNKNOWN' } }),
  );
}

interface Answer {
  parts: object[];
  finishReason: string | undefined;
  blockReason?: string;
}

/** What a model would answer this request with, following the request's tools, tool config and JSON mode. */
function answerFor(behaviour: GeminiBehaviour, body: any): Answer {
  if (behaviour.kind === 'blocked')
    return { parts: [], finishReason: undefined, blockReason: behaviour.reason };
  if (behaviour.kind === 'finish')
    return { parts: [{ text: behaviour.text ?? '' }], finishReason: behaviour.reason };
  const contents: any[] = Array.isArray(body.contents) ? body.contents : [];
  const lastParts: any[] = contents.at(-1)?.parts ?? [];
  const answered = lastParts.some((part) => part.functionResponse);
  const declarations: any[] = body.tools?.[0]?.functionDeclarations ?? [];
  const calling = body.toolConfig?.functionCallingConfig ?? {};
  const mode = calling.mode ?? 'AUTO';
  if (declarations.length > 0 && mode !== 'NONE' && (!answered || mode === 'ANY')) {
    const allowed: string[] | undefined = calling.allowedFunctionNames;
    const declaration = declarations.find((d) => !allowed || allowed.includes(d.name)) ?? declarations[0];
    const args = schemaInstance(
      declaration.parametersJsonSchema ?? declaration.parameters ?? { type: 'object' },
    );
    return { parts: [{ functionCall: { name: declaration.name, args } }], finishReason: 'STOP' };
  }
  const config = body.generationConfig ?? {};
  let text = behaviour.kind === 'ok' && behaviour.text ? behaviour.text : 'Hello from the fake Gemini model.';
  if (answered) text = `From the function response: ${text}`;
  if (config.responseMimeType === 'application/json')
    text = JSON.stringify(
      config.responseJsonSchema ? schemaInstance(config.responseJsonSchema) : { answer: text },
    );
  return { parts: [{ text }], finishReason: 'STOP' };
}

function serve(
  behaviour: GeminiBehaviour,
  model: string,
  stream: boolean,
  body: any,
  response: ServerResponse,
): void {
  if (behaviour.kind === 'status')
    return sendError(response, behaviour.status, behaviour.message ?? `fake error ${behaviour.status}`);
  if (behaviour.kind === 'malformed' && !stream) {
    response.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    response.end('{"candidates": [{"content": ');
    return;
  }
  const answer = answerFor(behaviour, body);
  const usage = { promptTokenCount: 17, candidatesTokenCount: 9, thoughtsTokenCount: 3, totalTokenCount: 29 };
  const envelope = (candidate: object | undefined, withUsage: boolean): object => ({
    ...(candidate ? { candidates: [candidate] } : { candidates: [] }),
    ...(answer.blockReason ? { promptFeedback: { blockReason: answer.blockReason } } : {}),
    usageMetadata: withUsage ? usage : { promptTokenCount: 17, totalTokenCount: 17 },
    modelVersion: model,
    responseId: 'fakeGeminiResponse1',
  });
  const candidate = (parts: object[], finishReason: string | undefined): object | undefined =>
    answer.blockReason
      ? undefined
      : { content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}), index: 0 };
  if (!stream) {
    response.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    response.end(JSON.stringify(envelope(candidate(answer.parts, answer.finishReason), true)));
    return;
  }
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  // Text arrives in pieces; a function call whole, in one event; the last event carries finishReason and usage.
  const events: object[] = [];
  for (const part of answer.parts as { text?: string }[]) {
    if (typeof part.text === 'string')
      for (const piece of part.text.split(/(?= )/)) events.push({ text: piece });
    else events.push(part);
  }
  void (async () => {
    for (const [index, part] of events.entries()) {
      if (behaviour.kind === 'cut' && index === behaviour.after) {
        response.socket?.destroy();
        return;
      }
      if (behaviour.kind === 'malformed' && index === 1) {
        response.end('data: {"candidates": [\r\n\r\n');
        return;
      }
      const last = index === events.length - 1;
      response.write(
        `data: ${JSON.stringify(envelope(candidate([part], last ? answer.finishReason : undefined), last))}\r\n\r\n`,
      );
      if (behaviour.kind === 'cut') await new Promise((resolve) => setTimeout(resolve, 5));
    }
    if (events.length === 0) response.write(`data: ${JSON.stringify(envelope(undefined, true))}\r\n\r\n`);
    response.end();
  })();
}
