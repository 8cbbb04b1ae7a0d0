// A mock OpenAI-compatible upstream for the benchmark: instant JSON answers, or a paced SSE stream of
// CHUNKS content chunks (every `mock_interval_ms` from the request body, 20 ms by default).
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
const pieces = Array.from({ length: CHUNKS }, (_, i) => chunk({ content: ` t${i}` }, null));

const server = createServer((request, response) => {
  let raw = '';
  request.on('data', (piece: Buffer) => (raw += piece.toString()));
  request.on('end', () => {
    let body: { stream?: boolean; mock_interval_ms?: number; stream_options?: { include_usage?: boolean } } =
      {};
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      // an empty or odd body is answered like any other
    }
    if (!body.stream) {
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(completion),
      });
      response.end(completion);
      return;
    }
    const interval = body.mock_interval_ms ?? 20;
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    response.write(chunk({ role: 'assistant', content: '' }, null));
    let sent = 0;
    const timer = setInterval(() => {
      if (response.destroyed) return clearInterval(timer);
      response.write(pieces[sent]!);
      sent += 1;
      if (sent === CHUNKS) {
        clearInterval(timer);
        response.write(chunk({}, 'stop'));
        if (body.stream_options?.include_usage) response.write(usageChunk);
        response.end('data: [DONE]\n\n');
      }
    }, interval);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
