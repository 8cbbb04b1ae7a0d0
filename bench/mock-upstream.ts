// A mock upstream for the benchmark: OpenAI chat completions (POST …/chat/completions) and Anthropic Messages
// (POST …/messages). Instant JSON answers, or a paced SSE stream of content chunks: `mock_chunks` of them (64 by
// default), one every `mock_interval_ms` (20 ms by default; 0 sends them all at once, as fast as the mock can).
// A gateway that translates drops unknown body fields, so a model named `mock-c<chunks>-i<interval ms>` says
// the same.
import { createServer } from 'node:http';

const port = Number(process.env['MOCK_PORT'] ?? 0);
const CHUNKS = 64;
const created = 1_700_000_000;
const completion = JSON.stringify({
  id: 'chatcmpl-mock',
  object: 'chat.completion',
  created,
  model: 'mock-model',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hello from the mock upstream.' },
      logprobs: null,
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
});
const chunk = (delta: object, finish: string | null): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created, model: 'mock-model', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
const usageChunk = `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created, model: 'mock-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: CHUNKS, total_tokens: 12 + CHUNKS } })}\n\n`;
const usageChunkOf = (chunks: number): string =>
  chunks === CHUNKS
    ? usageChunk
    : `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created, model: 'mock-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: chunks, total_tokens: 12 + chunks } })}\n\n`;
const pieces = Array.from({ length: 1000 }, (_, i) => chunk({ content: ` t${i}` }, null));

/** Anthropic Messages stream events (https://docs.anthropic.com/en/api/messages-streaming). */
const anthropicEvent = (type: string, data: object): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const anthropicStart = (model: string): string =>
  anthropicEvent('message_start', {
    message: {
      id: 'msg_mock',
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  }) + anthropicEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
const anthropicPieces = Array.from({ length: 1000 }, (_, i) =>
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ` t${i}` } }),
);
const anthropicEnd = (chunks: number): string =>
  anthropicEvent('content_block_stop', { index: 0 }) +
  anthropicEvent('message_delta', {
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: chunks },
  }) +
  anthropicEvent('message_stop', {});
const anthropicAnswer = JSON.stringify({
  id: 'msg_mock',
  type: 'message',
  role: 'assistant',
  model: 'mock-model',
  content: [{ type: 'text', text: 'Hello from the mock upstream.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 12, output_tokens: 7 },
});

interface MockBody {
  model?: string;
  stream?: boolean;
  mock_interval_ms?: number;
  mock_chunks?: number;
  stream_options?: { include_usage?: boolean };
}

/** The pace a request asks for: body fields first, then the model's name, then the defaults. */
function paceOf(body: MockBody): { chunks: number; interval: number } {
  const named = /-c(\d+)-i(\d+)$/.exec(body.model ?? '');
  return {
    chunks: Math.min(1000, body.mock_chunks ?? (named ? Number(named[1]) : CHUNKS)),
    interval: body.mock_interval_ms ?? (named ? Number(named[2]) : 20),
  };
}

/** Writes a stream's start, its content chunks at the pace asked for, and its end. */
function paced(
  response: import('node:http').ServerResponse,
  start: string,
  content: readonly string[],
  end: string,
  { chunks, interval }: { chunks: number; interval: number },
): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write(start);
  if (interval === 0) {
    for (let sent = 0; sent < chunks; sent++) response.write(content[sent]!);
    response.end(end);
    return;
  }
  let sent = 0;
  const timer = setInterval(() => {
    if (response.destroyed) return clearInterval(timer);
    response.write(content[sent]!);
    sent += 1;
    if (sent === chunks) {
      clearInterval(timer);
      response.end(end);
    }
  }, interval);
}

const server = createServer((request, response) => {
  let raw = '';
  request.on('data', (piece: Buffer) => (raw += piece.toString()));
  request.on('end', () => {
    let body: MockBody = {};
    try {
      body = JSON.parse(raw) as MockBody;
    } catch {
      // an empty or odd body is answered like any other
    }
    const anthropic = (request.url ?? '').endsWith('/messages');
    if (!body.stream) {
      const answer = anthropic ? anthropicAnswer : completion;
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(answer),
      });
      response.end(answer);
      return;
    }
    const pace = paceOf(body);
    if (anthropic) {
      paced(
        response,
        anthropicStart(body.model ?? 'mock-model'),
        anthropicPieces,
        anthropicEnd(pace.chunks),
        pace,
      );
      return;
    }
    const end =
      chunk({}, 'stop') +
      (body.stream_options?.include_usage ? usageChunkOf(pace.chunks) : '') +
      'data: [DONE]\n\n';
    paced(response, chunk({ role: 'assistant', content: '' }, null), pieces, end, pace);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
