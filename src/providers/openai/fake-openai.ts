import type { ServerResponse } from 'node:http';
import {
  type Behaviour,
  type FakeUpstream,
  SSE_HEADERS,
  drip,
  fail,
  finish,
  pieces,
  sse,
  startFakeUpstream,
} from '../fake-upstream.ts';
import { serveOpenAIEmbeddings } from '../fake-embeddings.ts';

/**
 * A fake OpenAI-compatible server on a loopback port, in the documented wire format: POST /v1/chat/completions,
 * SSE `data:` chunks ending in `[DONE]`, errors as {error:{message,type}}. `url` is the API root (`…/v1`).
 */
export function startFakeOpenAI(): Promise<FakeUpstream> {
  return startFakeUpstream({
    root: '/v1',
    serve: (behaviour, body, response, state) =>
      // An embeddings request (its body has `input`, not `messages`) is answered as POST /v1/embeddings.
      behaviour.kind === 'ok' && body?.input !== undefined && body?.messages === undefined
        ? serveOpenAIEmbeddings(body, response)
        : behaviour.kind === 'flood'
          ? void flood(behaviour.maxBytes, body, response, state)
          : serveOpenAI(behaviour, body, response),
  });
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
