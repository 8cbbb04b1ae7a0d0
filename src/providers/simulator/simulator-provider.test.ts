import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatChunk, ChatRequest } from '../../core/chat-types.ts';
import type { StreamEvent } from '../../core/stream-event.ts';
import { chatRequestOf, type RequestFields } from '../../core/testing.ts';
import { type PassChunk, RawChunk } from '../../core/raw-chunk.ts';
import { chunkEvents } from '../openai/chunk-events.ts';
import { ProviderError } from '../../core/provider-error.ts';
import { createSimulatorProvider } from './simulator-provider.ts';

const simulator = createSimulatorProvider({ id: 'simulator', chunkIntervalMs: 0, firstTokenMs: 0 });

const request = (fields: RequestFields = {}, body: Record<string, unknown> = {}): ChatRequest =>
  chatRequestOf({ model: 'm', messages: [{ role: 'user', content: 'Hello there' }], body, ...fields });

const complete = (r: ChatRequest) =>
  simulator.complete({
    request: r,
    upstreamModel: 'm',
    signal: new AbortController().signal,
    defaultMaxTokens: 100,
  });

/** The canonical events of a streamed answer, the batches joined. */
async function streamed(r: ChatRequest): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const batch of simulator.stream({
    request: r,
    upstreamModel: 'm',
    signal: new AbortController().signal,
    defaultMaxTokens: 100,
  }))
    events.push(...batch);
  return events;
}

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: {
        location: { type: 'object', properties: { city: { type: 'string' }, country: { type: 'string' } } },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'array', items: { type: 'integer', minimum: 1 } },
      },
      required: ['location', 'unit'],
    },
  },
};
const other = { type: 'function' as const, function: { name: 'other', parameters: { type: 'object' } } };

describe('the simulator behaves like a model', () => {
  it('json_object answers a JSON object; json_schema answers an instance of the schema', async () => {
    const asJson = await complete(request({ responseFormat: { type: 'json_object' } }));
    assert.equal(typeof JSON.parse(asJson.choices[0]!.message.content!), 'object');
    const schema = {
      type: 'object',
      properties: {
        title: { type: 'string' },
        items: { type: 'array', items: { $ref: '#/$defs/Item' } },
      },
      required: ['title', 'items'],
      $defs: { Item: { type: 'object', properties: { qty: { type: 'integer' } }, required: ['qty'] } },
    };
    const structured = await complete(
      request({
        responseFormat: { type: 'json_schema', json_schema: { name: 'list', schema, strict: true } },
      }),
    );
    const value = JSON.parse(structured.choices[0]!.message.content!) as {
      title: string;
      items: { qty: number }[];
    };
    assert.equal(typeof value.title, 'string');
    assert.equal(typeof value.items[0]?.qty, 'number');
    const events = await streamed(
      request({ responseFormat: { type: 'json_schema', json_schema: { name: 'list', schema } } }),
    );
    const text = events.map((event) => (event.type === 'text' ? event.text : '')).join('');
    assert.deepEqual(JSON.parse(text), value, 'streamed pieces join into the same JSON');
  });

  it('a schema it cannot fill within its budget is the request’s fault: a 400, whole, streamed or as tool arguments', async () => {
    const huge = { type: 'array', minItems: 1_000_000_000, items: { type: 'integer' } };
    const selfRef = {
      $defs: { a: { type: 'object', required: ['x'], properties: { x: { $ref: '#/$defs/a' } } } },
      $ref: '#/$defs/a',
    };
    const refused = (error: unknown): boolean => {
      assert.ok(error instanceof ProviderError, String(error));
      assert.equal(error.status, 400);
      assert.equal(error.clientFault, true);
      assert.match(error.message, /JSON schema asks for more than the model generates/);
      return true;
    };
    const format = (schema: unknown) =>
      request({
        responseFormat: { type: 'json_schema', json_schema: { name: 'x', schema } },
      } as Partial<ChatRequest>);
    await assert.rejects(complete(format(huge)), refused);
    await assert.rejects(streamed(format(selfRef)), refused);
    const tool = { type: 'function' as const, function: { name: 'f', parameters: selfRef } };
    await assert.rejects(complete(request({ tools: [tool] })), refused);
  });

  it('a long run of one letter, or a special token’s spelling, in a schema’s const is answered fast and whole', async () => {
    const cpuMs = (): number => {
      const usage = process.threadCpuUsage();
      return (usage.user + usage.system) / 1000;
    };
    const format = (schema: unknown) =>
      request({
        responseFormat: { type: 'json_schema', json_schema: { name: 'x', schema } },
      } as Partial<ChatRequest>);
    const started = cpuMs();
    const run = await complete(format({ const: 'x'.repeat(60_000) }));
    const elapsed = cpuMs() - started;
    assert.equal(run.choices[0]!.message.content, JSON.stringify('x'.repeat(60_000)));
    assert.ok(elapsed < 50, `counting a 60,000-letter run took ${elapsed.toFixed(1)} ms of CPU`);
    const special = await complete(format({ const: '<|endoftext|>' }));
    assert.equal(special.choices[0]!.message.content, '"<|endoftext|>"');
    assert.ok(special.usage!.completion_tokens > 1, 'spelled out as ordinary text');
  });

  it('a quarter-million-token prompt is counted in slices: the event loop keeps turning meanwhile', async () => {
    const cpuMs = (): number => {
      const usage = process.threadCpuUsage();
      return (usage.user + usage.system) / 1000;
    };
    const words = 'alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega'.split(' ');
    const parts: string[] = [];
    for (let i = 0; i < 250_000; i++) parts.push(`${words[(i * 7) % words.length]}${i % 97}`);
    const long = request({ messages: [{ role: 'user', content: parts.join(' ') }] });
    let longest = 0;
    let lastCpu = cpuMs();
    let lastWall = performance.now();
    // As test/helpers/loop-probe.ts: the stretch between ticks, in this thread's CPU time (the machine is shared).
    const timer = setInterval(() => {
      const cpu = cpuMs();
      const wall = performance.now();
      longest = Math.max(longest, Math.min(cpu - lastCpu, wall - lastWall));
      lastCpu = cpu;
      lastWall = wall;
    }, 1);
    try {
      const answer = await complete(long);
      assert.ok(answer.usage!.prompt_tokens > 250_000);
      // One more tick, which measures the stretch since the last one, however the count ended.
      await new Promise((resolve) => setTimeout(resolve, 5));
    } finally {
      clearInterval(timer);
    }
    assert.ok(longest < 50, `the event loop was held ${longest.toFixed(1)} ms`);
  });

  it('streams canonical events: start, the text, the finish reason, the usage; a tool call as tool events', async () => {
    const answer = await complete(request());
    const events = await streamed(request());
    assert.equal(events[0]?.type, 'start');
    assert.equal(
      events.map((event) => (event.type === 'text' ? event.text : '')).join(''),
      answer.choices[0]!.message.content,
    );
    assert.deepEqual(events.at(-2), { type: 'finish', reason: 'stop' });
    assert.deepEqual(events.at(-1), { type: 'usage', usage: answer.usage });

    const called = await streamed(request({ tools: [weather], toolChoice: 'required' }));
    const tools = called.filter((event) => event.type === 'tool');
    assert.equal(tools[0]?.name, 'get_weather');
    assert.match(tools[0]?.id ?? '', /^call_/);
    const args = JSON.parse(tools.map((event) => event.args).join('')) as { unit: string };
    assert.ok(['celsius', 'fahrenheit'].includes(args.unit));
    assert.deepEqual(called.at(-2), { type: 'finish', reason: 'tool_calls' });
  });

  it('tool arguments fill nested objects from the schema; tool_choice none, required and named are honoured', async () => {
    const auto = await complete(request({ tools: [weather, other] }));
    const call = auto.choices[0]!.message.tool_calls![0]!;
    assert.equal(auto.choices[0]!.finish_reason, 'tool_calls');
    const args = JSON.parse(call.function.arguments) as { location: { city: string }; unit: string };
    assert.equal(typeof args.location.city, 'string', 'the nested object is filled');
    assert.ok(['celsius', 'fahrenheit'].includes(args.unit));

    const none = await complete(request({ tools: [weather], toolChoice: 'none' }));
    assert.equal(none.choices[0]!.message.tool_calls, undefined);
    assert.equal(none.choices[0]!.finish_reason, 'stop');

    const named = await complete(
      request({ tools: [weather, other], toolChoice: { type: 'function', function: { name: 'other' } } }),
    );
    assert.equal(named.choices[0]!.message.tool_calls![0]!.function.name, 'other');

    const afterResult = [
      { role: 'user' as const, content: 'Weather?' },
      { role: 'assistant' as const, content: null, tool_calls: [call] },
      { role: 'tool' as const, content: '{"temp":20}', tool_call_id: call.id },
    ];
    const auto2 = await complete(request({ tools: [weather], messages: afterResult }));
    assert.equal(auto2.choices[0]!.finish_reason, 'stop', 'auto answers in text after the tool result');
    const required = await complete(
      request({ tools: [weather], toolChoice: 'required', messages: afterResult }),
    );
    assert.equal(required.choices[0]!.finish_reason, 'tool_calls', 'required calls a tool again');
  });

  it('stop sequences cut the answer; max_tokens reached gives "length"', async () => {
    const plain = (await complete(request())).choices[0]!.message.content!;
    const word = plain.split(' ')[3]!;
    const stopped = await complete(request({ stop: [` ${word}`] }));
    assert.equal(stopped.choices[0]!.message.content, plain.slice(0, plain.indexOf(` ${word}`)));
    assert.ok(!stopped.choices[0]!.message.content.includes(` ${word}`));
    assert.equal(stopped.choices[0]!.finish_reason, 'stop');
    const short = await complete(request({ maxTokens: 3 }));
    assert.equal(short.choices[0]!.finish_reason, 'length');
    assert.equal(short.usage!.completion_tokens, 3);
  });

  it('seed repeats the answer while ids stay unique; logprobs are answered when asked, null otherwise', async () => {
    const a = await complete(request({}, { seed: 7 }));
    const b = await complete(request({}, { seed: 7 }));
    assert.equal(a.choices[0]!.message.content, b.choices[0]!.message.content);
    assert.notEqual(a.id, b.id);
    assert.match(a.id, /^chatcmpl-/);
    const seeds = new Set<string | null>();
    for (let seed = 0; seed < 8; seed++)
      seeds.add((await complete(request({}, { seed }))).choices[0]!.message.content);
    assert.ok(seeds.size > 1, 'another seed gives another answer');
    const t1 = await complete(request({ tools: [weather] }));
    const t2 = await complete(request({ tools: [weather] }));
    assert.notEqual(t1.choices[0]!.message.tool_calls![0]!.id, t2.choices[0]!.message.tool_calls![0]!.id);

    assert.equal(a.choices[0]!.logprobs, null);
    const withLogprobs = await complete(request({}, { logprobs: true, top_logprobs: 2 }));
    const logprobs = withLogprobs.choices[0]!.logprobs as {
      content: { token: string; logprob: number; top_logprobs: unknown[] }[];
    };
    assert.equal(
      logprobs.content.map((entry) => entry.token).join(''),
      withLogprobs.choices[0]!.message.content,
    );
    assert.equal(logprobs.content.length, withLogprobs.usage!.completion_tokens);
    assert.ok(logprobs.content.every((entry) => entry.logprob < 0 && entry.top_logprobs.length === 2));
  });
});

describe('the simulator’s pass-through stream', () => {
  /** The pass-through chunks as JSON values: raw ones parsed from their bytes (checking what they locate). */
  /** The pass-through stream's chunks (every one naming the upstream model), as canonical events. */
  async function passedThrough(r: ChatRequest): Promise<StreamEvent[]> {
    const stream = await simulator.passThrough({
      request: r,
      upstreamModel: 'up-"model"-é',
      signal: new AbortController().signal,
      defaultMaxTokens: 100,
    });
    const chunks = [...stream.first];
    await new Promise<void>((resolve) =>
      stream.start({ batch: (batch) => (chunks.push(...batch), true), end: () => resolve() }),
    );
    const events: StreamEvent[] = [];
    chunks.forEach((chunk, i) => {
      if (chunk instanceof RawChunk) {
        assert.equal(chunk.bytes.toString('utf8', chunk.modelStart, chunk.modelEnd), '"up-\\"model\\"-é"');
        const parsed = JSON.parse(chunk.bytes.toString()) as ChatChunk;
        assert.equal(chunk.text, parsed.choices[0]?.delta.content ?? '');
        chunk = parsed;
      }
      assert.equal(chunk.model, 'up-"model"-é');
      chunkEvents(chunk, events, i > 0);
    });
    return events;
  }
  const withoutIds = (events: StreamEvent[]) =>
    events.map((event) => (event.type === 'start' ? { ...event, id: 'ID', created: 0 } : event));

  it('sends the chunks of the canonical stream, text ones as bytes with model and content located', async () => {
    for (const r of [
      request(),
      request({ maxTokens: 3 }),
      request({ responseFormat: { type: 'json_object' } }),
      request({ stop: ['e'] }),
    ]) {
      const canonical = await streamed(r);
      const raw = await passedThrough(r);
      assert.ok(raw.some((event) => event.type === 'text' && event.text !== ''));
      assert.deepEqual(withoutIds(raw), withoutIds(canonical));
    }
  });
});

describe('the simulator’s paced pass-through stream', () => {
  const paced = createSimulatorProvider({ id: 'paced', chunkIntervalMs: 5, firstTokenMs: 0 });
  const open = (signal = new AbortController().signal) =>
    paced.passThrough({ request: request(), upstreamModel: 'm', signal, defaultMaxTokens: 100 });
  const textOf = (chunk: PassChunk): string =>
    chunk instanceof RawChunk ? chunk.text : (chunk.choices[0]?.delta.content ?? '');

  it('sends one word a batch at its pace, then the finish reason and usage together; paused, it waits for resume', async () => {
    const whole = (await complete(request())).choices[0]!.message.content!;
    const stream = await open();
    const batches: PassChunk[][] = [stream.first.slice()];
    const at: number[] = [performance.now()];
    let paused = false;
    const failure = await new Promise<unknown>((resolve) =>
      stream.start({
        batch(batch) {
          batches.push(batch);
          at.push(performance.now());
          // The second batch pauses the stream for 30 ms.
          if (batches.length !== 3) return true;
          paused = true;
          setTimeout(() => ((paused = false), stream.resume()), 30);
          return false;
        },
        end: resolve,
      }),
    );
    assert.equal(failure, undefined);
    assert.equal(paused, false);
    assert.equal(stream.first.length, 0, 'the first chunks are let go once the stream starts');
    const last = batches.at(-1)!;
    assert.equal(last.length, 3, 'the last word, the finish reason and the usage in one batch');
    assert.ok(batches.slice(0, -1).every((batch) => batch.length === 1));
    assert.equal(batches.flat().map(textOf).join(''), whole);
    assert.ok(at[3]! - at[2]! >= 30, 'nothing came while paused');
    for (let i = 1; i < at.length; i++) assert.ok(at[i]! - at[i - 1]! >= 4, `batch ${i} came at its pace`);
  });

  it('an abort mid-way ends the stream with the failure, and nothing comes after it', async () => {
    const abort = new AbortController();
    const stream = await open(abort.signal);
    let after = 0;
    let ended = false;
    const failure = await new Promise<unknown>((resolve) =>
      stream.start({
        batch() {
          if (ended) after += 1;
          abort.abort();
          return true;
        },
        end(reason) {
          ended = true;
          resolve(reason);
        },
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.ok(failure instanceof Error);
    assert.equal(after, 0);
  });
});
