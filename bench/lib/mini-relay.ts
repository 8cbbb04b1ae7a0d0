// A gateway cut down to the stream fast path, for measuring what a chunk and an upstream read cost without the
// request's fixed work (authentication, admission, the hold, settlement): a node:http server whose every POST is
// relayed as an OpenAI-type stream to the upstream at PROXY_TARGET with the checkout ROOT's own code (its OpenAI
// provider's `passThrough`, its SSE sinks, the gateway's relay of each read: raw text kept, parsed chunks metered).
// Started by bench/relay-instructions.ts; prints `listening PORT`.
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';

const root = process.env['ROOT'] ?? new URL('../..', import.meta.url).pathname;
const target = process.env['PROXY_TARGET'] ?? 'http://127.0.0.1:1';
const port = Number(process.env['PORT'] ?? 0);

const { createOpenAIProvider } = await import(`${root}/src/providers/openai/openai-provider.ts`);
const { createSseSink, chatCompletionsSink } = await import(`${root}/src/http/sse-sink.ts`);
// A checkout from before the request vocabulary moved to src/core keeps it in src/gateway.
const { RawChunk, RawText } = await import(
  existsSync(`${root}/src/core/raw-chunk.ts`)
    ? `${root}/src/core/raw-chunk.ts`
    : `${root}/src/gateway/raw-chunk.ts`
);

const provider = createOpenAIProvider(
  { id: 'mock', type: 'openai', baseUrl: `${target}/v1`, headers: {} },
  { connectMs: 5_000, firstByteMs: 30_000, idleStreamMs: 30_000 },
);
const MODEL = 'model-b';

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

const server = createServer((request, response) => {
  let text = '';
  request.setEncoding('utf8');
  request.on('data', (piece: string) => (text += piece));
  request.on('end', () => void relay(JSON.parse(text) as Record<string, unknown>, response));
});

async function relay(
  body: Record<string, unknown>,
  response: import('node:http').ServerResponse,
): Promise<void> {
  const abort = new AbortController();
  const sink = chatCompletionsSink(createSseSink(response, { 'x-request-id': 'bench' }), false, MODEL);
  sink.onClose(() => abort.abort());
  const stream = await provider.passThrough({
    request: { model: MODEL, body },
    upstreamModel: 'mock-model',
    signal: abort.signal,
    defaultMaxTokens: 16,
  });
  sink.open({ rateLimits: {}, overheadMs: 0.1, costMicros: undefined });
  const rawText = new RawText();
  let usage: Usage | undefined;
  let generated = '';
  const chunks = (batch: unknown[]): boolean => {
    if (sink.closed) return true;
    for (const chunk of batch) {
      if (chunk instanceof RawChunk) rawText.add(chunk);
      else {
        const parsed = chunk as { model: string; usage?: Usage };
        parsed.model = MODEL;
        if (typeof parsed.usage?.prompt_tokens === 'number') usage = parsed.usage;
      }
    }
    return sink.passThrough(batch, MODEL);
  };
  if (!chunks(stream.first)) await sink.drain(30_000);
  const failure = await new Promise((resolve) => {
    stream.start({
      chunks(batch: unknown[]) {
        if (chunks(batch)) return true;
        void sink.drain(30_000).then(() => stream.resume());
        return false;
      },
      end(failure: unknown) {
        generated += rawText.take();
        resolve(failure);
      },
    });
  });
  if (failure !== undefined)
    sink.fail({ toBody: () => ({ error: { message: (failure as Error).message } }) });
  else {
    const prompt = usage?.prompt_tokens ?? 0;
    const completion = usage?.completion_tokens ?? generated.length;
    sink.complete({
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    });
  }
  sink.end();
}

server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
// A normal exit on SIGTERM, so that --cpu-prof writes its profile.
process.on('SIGTERM', () => process.exit(0));
