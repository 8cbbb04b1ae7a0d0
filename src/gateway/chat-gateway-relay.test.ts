// The stream relay of ChatGateway, in process: a scripted stream of canonical event batches in, the exact SSE text
// out (through the chat-completions front door's encoder, as the chat endpoint writes it).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { SettlementQueue } from '../billing/settlement-queue.ts';
import type { Config, ModelConfig } from '../core/config.ts';
import { MemoryLimiter } from '../limits/memory-limiter.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Router } from '../routing/router.ts';
import type { AccountRecord, ApiKeyRecord, Settlement } from '../core/records.ts';
import { newAccountRecord } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import type { HoldBook } from '../billing/hold-book.ts';
import type { ChatChunk, ChatRequest, FinishReason, Usage } from '../core/chat-types.ts';
import type { EventBatch, StreamEvent } from '../core/stream-event.ts';
import { type Admitted, ChatGateway } from './chat-gateway.ts';
import { countTextTokens } from '../core/count-tokens.ts';
import { chatRequestOf } from '../core/testing.ts';
import { chatCompletionsSink } from '../http/sse-sink.ts';
import type { TextSink } from './stream-sink.ts';
import { type PassChunk, RawChunk } from '../core/raw-chunk.ts';
import {
  type PassThroughHandler,
  type PassThroughStream,
  type Provider,
  type ProviderCall,
  type StreamOpener,
} from '../core/provider.ts';
import { ProviderError } from '../core/provider-error.ts';

const MODEL: ModelConfig = {
  id: 'model-b',
  description: 'test',
  contextWindow: 64_000,
  maxOutputTokens: 8_192,
  defaultMaxTokens: 1_024,
  inputMicrosPerMillion: 1_000_000,
  cachedInputMicrosPerMillion: 1_000_000,
  cacheWriteMicrosPerMillion: 1_000_000,
  cacheWrite1hMicrosPerMillion: 1_000_000,
  outputMicrosPerMillion: 2_000_000,
  latencyClass: 'fast',
  deployments: [],
  fallbacks: [],
};

// Canonical events, as a provider hands them over.
const start: StreamEvent = { type: 'start', id: 'chatcmpl-up1', created: 1_700_000_000 };
const text = (value: string): StreamEvent => ({ type: 'text', text: value });
const finish = (reason: FinishReason): StreamEvent => ({ type: 'finish', reason });
const usageEvent = (usage: Usage): StreamEvent => ({ type: 'usage', usage });
const tool = (index: number, args: string, id?: string, name?: string): StreamEvent => ({
  type: 'tool',
  index,
  id,
  name,
  args,
});

interface ErrorEvent {
  error: { code: string; type: string; message: string };
}
const parseChunk = (text: string): ChatChunk => JSON.parse(text) as ChatChunk;
const parseError = (text: string): ErrorEvent['error'] => (JSON.parse(text) as ErrorEvent).error;

class Sink implements TextSink {
  text = '';
  headers: Record<string, string> | undefined;
  ended = false;
  closed = false;
  #listeners: (() => void)[] = [];
  writes = 0;
  /** write() answers false after this many writes (back-pressure). */
  readonly slowAfter: number;
  constructor(slowAfter = Infinity) {
    this.slowAfter = slowAfter;
  }
  open(headers: Record<string, string>): void {
    this.headers = headers;
  }
  write(data: string): boolean {
    this.text += data;
    this.writes++;
    return this.writes <= this.slowAfter;
  }
  drains = 0;
  async drain(): Promise<void> {
    this.drains++;
  }
  end(): void {
    this.ended = true;
  }
  onClose(listener: () => void): void {
    this.#listeners.push(listener);
  }
  close(): void {
    this.closed = true;
    for (const listener of this.#listeners) listener();
  }
  events(): string[] {
    assert.ok(this.text.endsWith('\n\n'), 'every event ends with a blank line');
    return this.text
      .slice(0, -2)
      .split('\n\n')
      .map((event) => {
        assert.ok(event.startsWith('data: '), event);
        return event.slice('data: '.length);
      });
  }
}

/** The chat-completions encoder over the captured text, as the chat endpoint builds it. */
const sse = (sink: Sink, admitted: Admitted) =>
  chatCompletionsSink(sink, admitted.request.includeUsage, admitted.request.model);

/**
 * `batches`: what each upstream read brought (an Error: the stream fails there; `{ throws }`: it fails throwing
 * that value, which need not be an Error).
 */
function setup(
  batches: (EventBatch | Error | { throws: unknown })[],
  options: {
    includeUsage?: boolean;
    onChunk?: (index: number) => void;
    openFails?: Error;
    /** The upstream's iterator has no return() (the type allows it), or one that rejects. */
    upstreamReturn?: 'none' | 'rejects';
    /** The fast path: the router opens this stream (made once the abort signal is known) instead. */
    passThrough?: (signal: AbortSignal) => PassThroughStream;
  } = {},
) {
  const settled: Settlement[] = [];
  const observed: number[] = [];
  const logs: {
    level: number;
    msg: string;
    requestId?: string;
    deployment?: string;
    err?: { message: string };
  }[] = [];
  const signals: AbortSignal[] = [];
  // The request arrived 50 ms ago; the upstream call started 20 ms after it.
  const arrivedAt = performance.now() - 50;
  const [first, ...rest] = batches;
  async function* more(): AsyncGenerator<EventBatch> {
    let index = 1;
    for (const item of rest) {
      options.onChunk?.(index++);
      if (item instanceof Error) throw item;
      if (!Array.isArray(item)) throw item.throws;
      yield item;
    }
  }
  // The upstream iterator, recording each return() (letting go of the upstream call).
  const upstream = { returns: 0, fastPathAsked: [] as boolean[] };
  const generator = more();
  const upstreamRest: AsyncIterator<EventBatch> = {
    next: () => generator.next(),
    ...(options.upstreamReturn === 'none'
      ? {}
      : {
          return: async () => {
            upstream.returns++;
            if (options.upstreamReturn === 'rejects') throw new Error('the body was already gone');
            return generator.return(undefined);
          },
        }),
  };
  // The deployment's provider: its stream's first read, then the upstream iterator; the fast lane when given.
  const provider = {
    id: 'sim',
    stream: (): AsyncIterable<EventBatch> => ({
      [Symbol.asyncIterator]: () => {
        let opened = false;
        return {
          ...upstreamRest,
          next: () =>
            opened
              ? upstreamRest.next()
              : ((opened = true), Promise.resolve({ done: false as const, value: first as EventBatch })),
        };
      },
    }),
    ...(options.passThrough === undefined
      ? {}
      : { passThrough: async (call: ProviderCall) => options.passThrough!(call.signal) }),
  } as unknown as Provider;
  const router = {
    openStream: async (
      request: ChatRequest,
      signal: AbortSignal,
      defaultMaxTokens: number,
      _account: string | undefined,
      _observer: unknown,
      open: StreamOpener,
    ) => {
      signals.push(signal);
      if (options.openFails) throw options.openFails;
      const result = await open(provider, { request, upstreamModel: 'model-b', signal, defaultMaxTokens });
      upstream.fastPathAsked.push(result.lane === 'chunks');
      return {
        result,
        deployment: 'sim/model-b',
        provider: 'sim',
        attempts: 1,
        upstreamStartedAt: arrivedAt + 20,
      };
    },
  } as unknown as Router;
  const metrics = {
    overhead: { observe: (seconds: number) => void observed.push(seconds) },
    recordRequest() {},
    rejected: { inc() {} },
  } as unknown as Metrics;
  const gateway = new ChatGateway({
    config: {
      models: new Map([[MODEL.id, MODEL]]),
      maxMessages: 2048,
      timeouts: { idleStreamMs: 60_000 },
    } as unknown as Config,
    store: {} as Store,
    router,
    limiter: new MemoryLimiter(),
    settlements: { add: (s: Settlement) => void settled.push(s) } as unknown as SettlementQueue,
    holds: {} as HoldBook,
    metrics,
    clock: () => Date.parse('2026-11-03T10:00:00Z'),
    logger: pino(
      { level: 'debug' },
      { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) },
    ),
    limitsOf: () => ({ requestsPerMinute: null, tokensPerMinute: null, dailyTokens: null }),
    billingStanding: () => ({ ok: true }) as never,
  });
  const request = chatRequestOf({ stream: true, includeUsage: options.includeUsage ?? false });
  const account: AccountRecord = newAccountRecord('acct_1', 'a@example.com', 'x', 0);
  const admitted: Admitted = {
    ctx: { requestId: 'req_1', key: { id: 'key_1' } as ApiKeyRecord, account, arrivedAt },
    request,
    model: MODEL,
    promptTokens: 7,
    reservedTokens: 7,
    rateLimits: { requests: { limit: 10, remaining: 9, resetMs: 60_000 } },
  };
  return { gateway, admitted, settled, observed, logs, signals, upstream };
}

describe('the stream relay', () => {
  it('relays every event as a chunk under the public model id, then data: [DONE]', async () => {
    const { gateway, admitted, settled } = setup([[start], [text('Hel')], [text('lo')], [finish('stop')]]);
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const events = sink.events();
    assert.equal(events.length, 5);
    assert.equal(events.at(-1), '[DONE]');
    assert.ok(sink.text.endsWith('data: [DONE]\n\n'));
    const chunks = events.slice(0, -1).map(parseChunk);
    for (const c of chunks) {
      assert.equal(c.id, 'chatcmpl-up1');
      assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(c.model, 'model-b');
    }
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello');
    assert.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(
      chunks[0]?.choices[0]?.delta,
      { role: 'assistant', content: '' },
      'start: the role chunk',
    );
    assert.ok(sink.ended);
    assert.equal(sink.headers?.['x-ratelimit-limit-requests'], '10');
    assert.match(sink.headers?.['x-tollgate-overhead-ms'] ?? '', /^\d+\.\d{3}$/);
    assert.equal(settled.length, 1);
    assert.equal(settled[0]?.status, 'ok');
    assert.equal(settled[0]?.promptTokens, 7, 'no upstream usage: the prompt estimate');
    assert.equal(settled[0]?.completionTokens, 1, '"Hello" is one token');
    assert.equal(settled[0]?.estimated, true);
    assert.equal(settled[0]?.deployment, 'sim/model-b');
    assert.equal(settled[0]?.costMicros, Math.ceil((7 * 1_000_000 + 1 * 2_000_000) / 1_000_000));
  });

  it('bills the upstream usage when it reports one, and hides it from a client that did not ask', async () => {
    const usage = { prompt_tokens: 11, completion_tokens: 22, total_tokens: 33 };
    const { gateway, admitted, settled } = setup([
      [start, text('a')],
      [text('b'), usageEvent(usage)],
    ]);
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const events = sink.events();
    assert.deepEqual(events.at(-1), '[DONE]');
    assert.equal(events.length, 4, 'the usage chunk is not forwarded');
    for (const e of events.slice(0, -1)) assert.equal('usage' in parseChunk(e), false);
    assert.equal(settled[0]?.promptTokens, 11);
    assert.equal(settled[0]?.completionTokens, 22);
    assert.equal(settled[0]?.estimated, false);
  });

  it('forwards the upstream usage chunk to a client that asked (include_usage), once', async () => {
    const usage = { prompt_tokens: 11, completion_tokens: 22, total_tokens: 33 };
    const { gateway, admitted } = setup([[start, text('a')], [usageEvent(usage)]], { includeUsage: true });
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const events = sink.events();
    assert.equal(events.length, 4);
    assert.equal('usage' in parseChunk(events[1]!), false);
    assert.deepEqual(parseChunk(events[2]!).usage, usage);
    assert.deepEqual(parseChunk(events[2]!).choices, []);
    assert.equal(parseChunk(events[2]!).model, 'model-b');
    assert.equal(events[3], '[DONE]');
  });

  it('makes the usage chunk itself when the client asked and the upstream sent none', async () => {
    const { gateway, admitted } = setup([[start, text('Hello')], [text(' world')]], { includeUsage: true });
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const events = sink.events();
    assert.equal(events.length, 5);
    const last = parseChunk(events[3]!);
    assert.equal(last.id, 'chatcmpl-up1');
    assert.equal(last.object, 'chat.completion.chunk');
    assert.equal(last.created, 1_700_000_000);
    assert.equal(last.model, 'model-b');
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 });
    assert.equal(events[4], '[DONE]');
  });

  it('counts tool-call deltas as generated text', async () => {
    const call = {
      index: 0,
      id: 'c1',
      type: 'function' as const,
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    };
    const { gateway, admitted, settled } = setup([
      [start, tool(0, call.function.arguments, call.id, call.function.name)],
      [tool(0, ''), finish('tool_calls')],
    ]);
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.ok((settled[0]?.completionTokens ?? 0) >= 3, `tokens ${settled[0]?.completionTokens}`);
    assert.deepEqual(parseChunk(sink.events()[1]!).choices[0]?.delta.tool_calls, [call]);
    assert.deepEqual(parseChunk(sink.events()[2]!).choices[0]?.delta.tool_calls, [
      { index: 0, function: { arguments: '' } },
    ]);
  });

  it('a failure mid-stream ends it with one error event and no [DONE]; the request is billed as an error', async () => {
    const { gateway, admitted, settled } = setup([
      [start, text('Hel')],
      [text('lo')],
      new Error('socket hang up'),
    ]);
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const events = sink.events();
    assert.equal(events.length, 4);
    assert.ok(!sink.text.includes('[DONE]'));
    const error = parseError(events[3]!);
    assert.equal(error.code, 'provider_error');
    assert.equal(error.type, 'api_error');
    assert.equal(typeof error.message, 'string');
    assert.doesNotMatch(error.message, /socket hang up/);
    assert.ok(sink.ended);
    assert.equal(settled[0]?.status, 'error');
    assert.equal(settled[0]?.completionTokens, 1, 'what was sent is still counted');
  });

  it('stops reading when the client goes: cancelled, no [DONE]', async () => {
    const sink = new Sink();
    const { gateway, admitted, settled } = setup([[text('a')], [text('b')], [text('c')], [text('d')]], {
      onChunk: (index) => {
        if (index === 2) sink.close();
      },
    });
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.ok(!sink.text.includes('[DONE]'));
    assert.ok(!sink.text.includes('"d"'));
    assert.equal(settled[0]?.status, 'cancelled');
  });

  it('waits for the client to drain when a write reports back-pressure', async () => {
    const { gateway, admitted } = setup([[text('a')], [text('b')], [text('c')]]);
    const sink = new Sink(1);
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.equal(sink.drains, 2);
    assert.equal(sink.events().length, 4);
  });

  it('reports the overhead before the upstream call (header and metric) and the time to first token', async () => {
    const { gateway, admitted, settled, observed } = setup([[text('a')]]);
    const sink = new Sink();
    const before = performance.now();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const after = performance.now();
    assert.equal(sink.headers?.['x-tollgate-overhead-ms'], '20.000');
    assert.equal(observed.length, 1);
    assert.ok(Math.abs(observed[0]! - 0.02) < 1e-9, `observed ${observed[0]} s`);
    // From arrival to the first chunk: between the call's start and its end, measured from arrival.
    const ttft = settled[0]?.ttftMs ?? -1;
    const arrivedAt = admitted.ctx.arrivedAt;
    assert.ok(ttft >= before - arrivedAt && ttft <= after - arrivedAt, `ttft ${ttft} ms`);
  });

  it('an upstream that cannot be opened throws, and the request is settled as an error with nothing billed', async () => {
    const failure = new Error('no deployment answered');
    const { gateway, admitted, settled } = setup([[text('a')]], { openFails: failure });
    const sink = new Sink();
    await assert.rejects(gateway.streamAnswer(admitted, sse(sink, admitted)), (error) => error === failure);
    assert.equal(sink.headers, undefined, 'nothing was sent');
    assert.equal(settled.length, 1);
    assert.equal(settled[0]?.status, 'error');
    assert.equal(settled[0]?.promptTokens, 0);
    assert.equal(settled[0]?.completionTokens, 0);
    assert.equal(settled[0]?.costMicros, 0);
  });

  it('a client that leaves aborts the upstream call; an upstream failure after that writes nothing', async () => {
    const sink = new Sink();
    const { gateway, admitted, settled, signals, logs } = setup(
      [[text('a')], [text('b')], new Error('aborted')],
      {
        onChunk: (index) => {
          if (index === 2) sink.close();
        },
      },
    );
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.equal(signals[0]?.aborted, true, 'the upstream request is aborted');
    assert.ok(!sink.text.includes('provider_error'));
    assert.ok(!sink.text.includes('[DONE]'));
    assert.equal(settled[0]?.status, 'cancelled');
    assert.equal(logs.filter((line) => line.level >= 40).length, 0, 'a client leaving is not a failure');
  });

  it('a failure mid-stream is logged with the request id and the deployment', async () => {
    const { gateway, admitted, logs } = setup([[text('a')], new Error('socket hang up')]);
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.match(parseError(sink.events().at(-1)!).message, /incomplete/);
    const warning = logs.find((line) => line.level === 40);
    assert.equal(warning?.msg, 'stream failed after its first chunk');
    assert.equal(warning?.requestId, 'req_1');
    assert.equal(warning?.deployment, 'sim/model-b');
    assert.equal(warning?.err?.message, 'socket hang up');
  });

  it('an upstream that fails throwing something that is not an Error still ends with the error event', async () => {
    const { gateway, admitted, settled, logs } = setup([[text('a')], { throws: undefined }]);
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.equal(parseError(sink.events().at(-1)!).code, 'provider_error');
    assert.ok(!sink.text.includes('[DONE]'));
    assert.equal(settled[0]?.status, 'error');
    const warning = logs.find((line) => line.level === 40);
    assert.equal(warning?.err?.message, 'stream failed', 'the log line still carries an error');
  });

  it('keeps the upstream usage when events follow it', async () => {
    const usage = { prompt_tokens: 11, completion_tokens: 22, total_tokens: 33 };
    const { gateway, admitted, settled } = setup([[text('a'), usageEvent(usage)], [text('b')]]);
    await gateway.streamAnswer(admitted, sse(new Sink(), admitted));
    assert.equal(settled[0]?.promptTokens, 11);
    assert.equal(settled[0]?.completionTokens, 22);
    assert.equal(settled[0]?.estimated, false);
  });

  it('relays a batch of several events in one write', async () => {
    const { gateway, admitted, settled } = setup([[start, text('a'), text('b'), finish('stop')]]);
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.equal(sink.events().length, 5);
    assert.equal(sink.writes, 2, 'the batch, then [DONE]');
    assert.equal(settled[0]?.status, 'ok');
  });

  it('counts a tool call as its name and arguments, exactly', async () => {
    const call = {
      index: 0,
      id: 'c1',
      type: 'function' as const,
      function: { name: 'get_weather', arguments: '{"city":' },
    };
    const { gateway, admitted, settled } = setup([
      [tool(0, call.function.arguments, call.id, call.function.name)],
      [tool(0, '"Paris"}')],
      [tool(0, ''), tool(1, ''), finish('tool_calls')],
    ]);
    await gateway.streamAnswer(admitted, sse(new Sink(), admitted));
    assert.equal(settled[0]?.completionTokens, countTextTokens('get_weather{"city":"Paris"}'));
  });

  it('forwards the upstream usage chunk as sent (not a made-up one)', async () => {
    const usage = {
      prompt_tokens: 11,
      completion_tokens: 22,
      total_tokens: 33,
      prompt_tokens_details: { cached_tokens: 3 },
    };
    const { gateway, admitted } = setup([[start, text('a')], [usageEvent(usage)]], { includeUsage: true });
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const events = sink.events();
    assert.equal(events.length, 4);
    assert.deepEqual(parseChunk(events[2]!).usage, usage);
  });
});

describe('an answer that spells a special token', () => {
  it('is relayed, and settled with its estimate when the upstream sent no usage', async () => {
    const said = 'say <|endoftext|> now';
    const { gateway, admitted, settled } = setup([[start, text(said)], [finish('stop')]]);
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.equal(sink.events().at(-1), '[DONE]');
    assert.equal(settled.length, 1);
    assert.equal(settled[0]!.status, 'ok');
    assert.equal(settled[0]!.estimated, true);
    assert.equal(settled[0]!.completionTokens, countTextTokens(said));
  });
});

describe('letting go of the upstream call', () => {
  it('an answer read to its end keeps it (no return()); a client that leaves lets go of it (return())', async () => {
    const whole = setup([[start, text('a')], [finish('stop')]]);
    await whole.gateway.streamAnswer(whole.admitted, sse(new Sink(), whole.admitted));
    assert.equal(whole.settled[0]?.status, 'ok');
    assert.equal(whole.upstream.returns, 0);

    const sink = new Sink();
    const left = setup([[text('a')], [text('b')], [text('c')]], {
      onChunk: (index) => {
        if (index === 1) sink.close();
      },
    });
    await left.gateway.streamAnswer(left.admitted, sse(sink, left.admitted));
    assert.equal(left.settled[0]?.status, 'cancelled');
    assert.equal(left.upstream.returns, 1);
  });

  it('a client that leaves an upstream iterator without return(), or whose return() fails, still ends the stream', async () => {
    for (const upstreamReturn of ['none', 'rejects'] as const) {
      const sink = new Sink();
      const { gateway, admitted, settled } = setup([[text('a')], [text('b')]], {
        upstreamReturn,
        onChunk: () => sink.close(),
      });
      await gateway.streamAnswer(admitted, sse(sink, admitted));
      assert.equal(settled[0]?.status, 'cancelled', upstreamReturn);
      assert.ok(sink.ended, upstreamReturn);
    }
  });

  it('takes the fast lane only when the front door offers it', async () => {
    // The provider offers the fast lane; the door takes the canonical events.
    const { gateway, admitted, upstream } = setup([[start, text('a')], [finish('stop')]], {
      passThrough: (signal) => new FastUpstream(signal, [rawChunk('a')], []),
    });
    const door = sse(new Sink(), admitted);
    delete door.passThrough;
    await gateway.streamAnswer(admitted, door);
    assert.deepEqual(upstream.fastPathAsked, [false]);
  });
});

/** A raw chunk as the fast path's scanner hands it over: the upstream's bytes, model and content located. */
function rawChunk(content: string): RawChunk {
  const bytes = Buffer.from(
    JSON.stringify({
      id: 'chatcmpl-up1',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'up-model',
      choices: [{ index: 0, delta: { content }, finish_reason: null }],
    }),
  );
  const modelStart = bytes.indexOf('"up-model"');
  const value = JSON.stringify(content);
  const textStart = bytes.indexOf(`"content":${value}`) + '"content":"'.length;
  return new RawChunk(
    bytes,
    modelStart,
    modelStart + '"up-model"'.length,
    -1,
    -1,
    textStart,
    textStart + Buffer.byteLength(value) - 2,
    value.includes('\\'),
  );
}

/** A chunk the fast path had to parse (usage, a finish, tool calls): it comes with the upstream's model id. */
const parsedChunk = (fields: Partial<ChatChunk>): ChatChunk => ({
  id: 'chatcmpl-up1',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'up-model',
  choices: [],
  ...fields,
});

/**
 * A pass-through upstream as the reader behaves: `first` when it opens, then each read's chunks on a turn of its own
 * (an Error: the stream fails there); it pauses when the handler says so until resume(), and after an abort it
 * ends with an `aborted` failure on a later turn (a read already in hand is still handed over).
 */
class FastUpstream implements PassThroughStream {
  readonly first: PassChunk[];
  readonly #reads: (PassChunk[] | ProviderError)[];
  readonly #onRead: ((index: number) => void) | undefined;
  #handler: PassThroughHandler | undefined;
  #index = 0;
  #paused = false;
  #ended = false;
  #endedWith: ProviderError | undefined;
  pauses = 0;
  resumes = 0;
  /** Calls that break the contract: a second start, a resume while not paused. */
  misuse: string[] = [];

  constructor(
    signal: AbortSignal,
    first: PassChunk[],
    reads: (PassChunk[] | ProviderError)[],
    onRead?: (index: number) => void,
  ) {
    this.first = first;
    this.#reads = reads;
    this.#onRead = onRead;
    signal.addEventListener('abort', () =>
      setImmediate(() => this.#end(new ProviderError('aborted', 'the request was aborted'))),
    );
  }

  start(handler: PassThroughHandler): void {
    if (this.#handler !== undefined) this.misuse.push('start twice');
    this.#handler = handler;
    if (this.#ended) handler.end(this.#endedWith);
    else setImmediate(() => this.#read());
  }

  stop(): void {}

  resume(): void {
    if (!this.#paused) {
      this.misuse.push('resume while not paused');
      return;
    }
    this.#paused = false;
    this.resumes++;
    setImmediate(() => this.#read());
  }

  #read(): void {
    if (this.#ended || this.#paused) return;
    const index = this.#index++;
    this.#onRead?.(index + 1);
    const read = this.#reads[index];
    if (read === undefined) return this.#end(undefined);
    if (read instanceof Error) return this.#end(read);
    if (this.#handler!.batch(read)) setImmediate(() => this.#read());
    else {
      this.#paused = true;
      this.pauses++;
    }
  }

  #end(failure: ProviderError | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#endedWith = failure;
    this.#handler?.end(failure);
  }
}

/** The gateway on the fast path: the router opens a FastUpstream. */
function fastSetup(
  first: PassChunk[],
  reads: (PassChunk[] | ProviderError)[],
  options: { includeUsage?: boolean; onRead?: (index: number) => void } = {},
) {
  let fast: FastUpstream | undefined;
  const context = setup([], {
    includeUsage: options.includeUsage ?? false,
    passThrough: (signal) => (fast = new FastUpstream(signal, first, reads, options.onRead)),
  });
  return { ...context, fast: () => fast! };
}

const contentOf = (chunks: ChatChunk[]): string =>
  chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

describe('the fast path (pass-through)', () => {
  it('relays raw and parsed chunks under the public model id, one write per read, then data: [DONE]', async () => {
    const { gateway, admitted, settled, upstream, fast } = fastSetup(
      [rawChunk('Hel')],
      [
        [rawChunk('lo'), rawChunk(' world')],
        [parsedChunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })],
      ],
    );
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.deepEqual(upstream.fastPathAsked, [true]);
    const events = sink.events();
    assert.equal(events.length, 5);
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map(parseChunk);
    for (const c of chunks) assert.equal(c.model, 'model-b');
    assert.equal(contentOf(chunks), 'Hello world');
    assert.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'stop');
    assert.equal(sink.writes, 4, 'each read in one write, then [DONE]');
    assert.ok(sink.ended);
    assert.deepEqual(fast().misuse, []);
    assert.equal(settled.length, 1);
    assert.equal(settled[0]?.status, 'ok');
    assert.equal(settled[0]?.estimated, true);
    assert.equal(settled[0]?.promptTokens, 7);
    assert.equal(settled[0]?.completionTokens, countTextTokens('Hello world'));
  });

  it('estimates from the text in the order it came, raw and parsed chunks mixed', async () => {
    const { gateway, admitted, settled } = fastSetup(
      [rawChunk('Hel')],
      [
        [
          parsedChunk({ choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: null }] }),
          rawChunk(' the'),
        ],
        [rawChunk('re')],
      ],
    );
    await gateway.streamAnswer(admitted, sse(new Sink(), admitted));
    assert.equal(settled[0]?.completionTokens, countTextTokens('Hello there'));
    assert.equal(settled[0]?.estimated, true);
  });

  it('bills the upstream usage from its usage chunk', async () => {
    const usage = { prompt_tokens: 11, completion_tokens: 22, total_tokens: 33 };
    const { gateway, admitted, settled } = fastSetup(
      [rawChunk('a')],
      [[rawChunk('b')], [parsedChunk({ usage })]],
      { includeUsage: true },
    );
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const events = sink.events();
    assert.deepEqual(parseChunk(events.at(-2)!).usage, usage);
    assert.equal(parseChunk(events.at(-2)!).model, 'model-b');
    assert.equal(settled[0]?.promptTokens, 11);
    assert.equal(settled[0]?.completionTokens, 22);
    assert.equal(settled[0]?.estimated, false);
  });

  it('pauses the upstream while the client is not keeping up, and resumes it once drained', async () => {
    const { gateway, admitted, settled, fast } = fastSetup(
      [rawChunk('a')],
      [[rawChunk('b')], [rawChunk('c')], [rawChunk('d')]],
    );
    const sink = new Sink(0); // every write reports back-pressure
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.equal(sink.drains, 4, 'after the first read and after each later one');
    assert.equal(fast().pauses, 3);
    assert.equal(fast().resumes, 3);
    assert.deepEqual(fast().misuse, []);
    assert.equal(contentOf(sink.events().slice(0, -1).map(parseChunk)), 'abcd');
    assert.equal(settled[0]?.status, 'ok');
  });

  it('writes nothing more once the client has gone, and waits on no drain: cancelled, no [DONE]', async () => {
    const sink = new Sink();
    const { gateway, admitted, settled, signals, logs, fast } = fastSetup(
      [rawChunk('a')],
      [[rawChunk('b')], [rawChunk('c')], [rawChunk('d')]],
      {
        onRead: (index) => {
          if (index === 2) sink.close();
        },
      },
    );
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    assert.equal(signals[0]?.aborted, true);
    assert.equal(
      contentOf(sink.events().map(parseChunk)),
      'ab',
      'the read after the client left is not written',
    );
    assert.equal(sink.drains, 0);
    assert.deepEqual(fast().misuse, []);
    assert.equal(settled[0]?.status, 'cancelled');
    assert.equal(logs.filter((line) => line.level >= 40).length, 0, 'a client leaving is not a failure');
    assert.ok(sink.ended);
  });

  it('an upstream failure mid-way ends the stream with one error event and no [DONE], billed as an error', async () => {
    const { gateway, admitted, settled, logs } = fastSetup(
      [rawChunk('Hel')],
      [[rawChunk('lo')], new ProviderError('protocol', 'a chunk that is not JSON')],
    );
    const sink = new Sink();
    await gateway.streamAnswer(admitted, sse(sink, admitted));
    const events = sink.events();
    assert.equal(events.length, 3);
    assert.ok(!sink.text.includes('[DONE]'));
    assert.equal(parseError(events[2]!).code, 'provider_error');
    assert.equal(settled[0]?.status, 'error');
    assert.equal(settled[0]?.completionTokens, countTextTokens('Hello'), 'what was sent is still counted');
    const warning = logs.find((line) => line.level === 40);
    assert.equal(warning?.msg, 'stream failed after its first chunk');
    assert.equal(warning?.err?.message, 'a chunk that is not JSON');
    assert.ok(sink.ended);
  });
});
