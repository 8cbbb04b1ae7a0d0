import { hash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { decode } from 'gpt-tokenizer';
import { countPromptTokensYielding, countTextTokens, encodeText } from '../../core/count-tokens.ts';
import type {
  ChatChunk,
  ChatCompletion,
  ChatRequest,
  FinishReason,
  ToolCall,
  ToolDefinition,
  Usage,
} from '../../core/chat-types.ts';
import { PrefixCache } from './prefix-cache.ts';
import { knownParams, type KnownParams } from '../../core/known-params.ts';
import { ownBytes, type PassChunk, RawChunk } from '../../core/raw-chunk.ts';
import type { EventBatch } from '../../core/stream-event.ts';
import { chunkEvents } from '../openai/chunk-events.ts';
import {
  type PassThroughHandler,
  type PassThroughStream,
  type PassThroughProvider,
  type ProviderCall,
} from '../../core/provider.ts';
import { ProviderError } from '../../core/provider-error.ts';
import { SchemaBudgetError, schemaInstance } from './schema-instance.ts';
import { choicesOf } from '../../core/choices.ts';

/** The simulator's `system_fingerprint`: its configuration does not change between answers. */
const SYSTEM_FINGERPRINT = 'fp_tollgate_sim1';

const WORDS = (
  'the gateway answers every request with care and counts each token it sends so that the ledger stays exact ' +
  'while the model thinks about your question and writes a short reply that is useful deterministic and kind'
).split(' ');

interface Answer {
  text: string;
  /** The stop sequence the text was cut at, if one was. */
  stopSequence?: string | undefined;
  toolCall: ToolCall | undefined;
  /** The request asked for structured output (its text is JSON, cut into pieces as JSON). */
  structured: boolean;
  finishReason: FinishReason;
  completionTokens: number;
}

/** Ids are unique per request (a process prefix and a counter), while answers repeat for the same request. */
const ID_PREFIX = randomBytes(6).toString('hex');
let idCounter = 0;
const nextId = (): string => `${ID_PREFIX}${(++idCounter).toString(36).padStart(6, '0')}`;

/**
 * A deterministic local model: the same request (and `seed`) gets the same answer, with exact token counts.
 * It streams one word per chunk at a configured pace; it answers a tools request with a tool call whose
 * arguments fit the tool's schema, `response_format` with valid JSON (an instance of the schema when one is
 * given), and honours `stop`, `max_tokens`, `tool_choice` and `logprobs` as a real model would.
 */
export function createSimulatorProvider(options: {
  id: string;
  chunkIntervalMs: number;
  firstTokenMs: number;
}): PassThroughProvider {
  const cache = new PrefixCache();
  return {
    id: options.id,
    async complete(call) {
      await pause(options.firstTokenMs, call.signal);
      const answers = Array.from({ length: choicesOf(call.request) }, (_, choice) =>
        compose(call.request, choice),
      );
      const usage = simulatedUsage(call, answers, await promptTokensOf(call), cache);
      const completion: ChatCompletion = {
        id: `chatcmpl-sim${nextId()}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: call.upstreamModel,
        system_fingerprint: SYSTEM_FINGERPRINT,
        choices: answers.map((answer, index) => ({
          index,
          message: {
            role: 'assistant',
            content: answer.toolCall ? null : answer.text,
            ...(answer.toolCall ? { tool_calls: [answer.toolCall] } : {}),
            refusal: null,
          },
          logprobs:
            wantsLogprobs(call.request) && !answer.toolCall
              ? logprobsOf(answer.text, call.request, MAX_LOGPROB_TOKENS)
              : null,
          finish_reason: answer.finishReason,
          ...(answer.stopSequence !== undefined ? { stop_reason: answer.stopSequence } : {}),
        })),
        usage,
      };
      return completion;
    },
    async *stream(call) {
      // The same chunks as canonical events; those due at the same moment in one batch, as on the fast path.
      let batch: EventBatch = [];
      let started = false;
      for (const step of planFor(call, options, begin(call, await promptTokensOf(call), cache))) {
        if (step.afterMs > 0 && batch.length > 0) {
          yield batch;
          batch = [];
        }
        await pause(step.afterMs, call.signal);
        chunkEvents(step.chunk, batch, started);
        started = true;
      }
      yield batch;
    },
    passThrough(call) {
      // A usual prompt is counted at once: the fast path takes no extra turn for it.
      const counted = promptTokensOf(call);
      const open = (tokens: number) => passThrough(passPlan(call, options, tokens, cache), call.signal);
      return typeof counted === 'number' ? open(counted) : counted.then(open);
    },
    async close() {},
  };
}

/** One chunk of a simulated stream and how long after the one before it (or the request) it comes. */
interface Step {
  chunk: ChatChunk;
  afterMs: number;
}

interface PlanOptions {
  chunkIntervalMs: number;
  firstTokenMs: number;
}

/** What every chunk of one simulated stream shares. */
type ChunkBase = Pick<ChatChunk, 'id' | 'object' | 'created' | 'model'>;

/** What a simulated stream is made from: the answer (known in advance), its prompt's tokens, the chunks' base. */
interface Begun {
  /** The first choice's answer (the one a request for one choice gets). */
  answer: Answer;
  /** Every choice's answer, the first included (`n`). */
  answers: Answer[];
  /** The whole request's usage: the prompt once, every choice's completion. */
  usage: Usage;
  base: ChunkBase;
}

/** The simulated models that reason before they answer (the catalog's reasoning models). */
const REASONING_MODELS = new Set(['model-a', 'model-d']);
/** The hidden reasoning such a model reports, when its answer's token limit leaves room for it. */
const REASONING_TOKENS = 48;

/**
 * The usage the simulator reports: the prompt, of which what its prompt cache held for this account; each
 * choice's answer, and for a reasoning model the reasoning before it, within the token limit (so an answer never
 * costs more than its hold).
 */
function simulatedUsage(
  call: ProviderCall,
  answers: Answer[],
  promptTokens: number,
  cache: PrefixCache,
): Usage {
  const known = knownParams(call.request.body);
  const scope = `${call.account ?? ''}\u0000${call.upstreamModel}`;
  const cached = cache.use(scope, call.request.messages, known.tools, promptTokens);
  let completion = 0;
  let reasoning = 0;
  for (const answer of answers) {
    const room = (known.maxTokens ?? call.defaultMaxTokens) - answer.completionTokens;
    const thought =
      REASONING_MODELS.has(call.upstreamModel) && answer.finishReason !== 'length'
        ? Math.max(0, Math.min(REASONING_TOKENS, room))
        : 0;
    completion += answer.completionTokens + thought;
    reasoning += thought;
  }
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
    ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
    ...(reasoning > 0 ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {}),
  };
}

/**
 * The prompt's tokens, counted as admission counts them: a long prompt (a quarter of a million tokens take
 * hundreds of milliseconds) is counted in slices that let the event loop turn.
 */
const promptTokensOf = (call: ProviderCall): number | Promise<number> =>
  countPromptTokensYielding(
    call.request.messages,
    knownParams(call.request.body).tools,
    Number.POSITIVE_INFINITY,
  );

function begin(call: ProviderCall, promptTokens: number, cache: PrefixCache): Begun {
  const answers = Array.from({ length: choicesOf(call.request) }, (_, choice) =>
    compose(call.request, choice),
  );
  return {
    answer: answers[0]!,
    answers,
    usage: simulatedUsage(call, answers, promptTokens, cache),
    base: {
      id: `chatcmpl-sim${nextId()}`,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: call.upstreamModel,
    },
  };
}

/** The stream's last chunk: its usage, and no choice. */
const usageChunk = (base: ChunkBase, usage: Usage): ChatChunk => ({ ...base, choices: [], usage });

/**
 * The stream of all the request's choices (`n`): each choice's chunks in turn, with its index, and one usage chunk
 * at the end counting every choice's completion.
 */
function planFor(call: ProviderCall, options: PlanOptions, begun: Begun): Step[] {
  if (begun.answers.length === 1) return plan(call, options, begun);
  const steps: Step[] = [];
  for (const [choice, answer] of begun.answers.entries()) {
    const own = plan(call, options, { ...begun, answer });
    // Its last step is its usage chunk: one for the whole stream comes after every choice.
    for (const step of own.slice(0, -1)) {
      for (const part of step.chunk.choices) part.index = choice;
      steps.push(step);
    }
  }
  steps.push({ chunk: usageChunk(begun.base, begun.usage), afterMs: 0 });
  return steps;
}

/** The chunks the simulator streams for `call` as parsed chunks, in order, with their pace. */
function plan(call: ProviderCall, options: PlanOptions, begun: Begun): Step[] {
  const { answer, usage, base } = begun;
  const chunk = (
    delta: ChatChunk['choices'][number]['delta'],
    finish: FinishReason | null = null,
  ): ChatChunk => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const steps: Step[] = [];
  const add = (next: ChatChunk, afterMs: number): number => steps.push({ chunk: next, afterMs });
  if (answer.toolCall) {
    const { id, function: fn } = answer.toolCall;
    add(
      chunk({
        role: 'assistant',
        content: null,
        tool_calls: [{ index: 0, id, type: 'function', function: { name: fn.name, arguments: '' } }],
      }),
      options.firstTokenMs,
    );
    add(
      chunk({ tool_calls: [{ index: 0, function: { arguments: fn.arguments } }] }),
      options.chunkIntervalMs,
    );
  } else {
    const logprobs = wantsLogprobs(call.request);
    let logprobTokens = MAX_LOGPROB_TOKENS;
    const text = new Pieces(answer.text, answer.structured);
    for (let index = 0; index < text.count; index++) {
      const piece = text.next();
      const next = chunk(index === 0 ? { role: 'assistant', content: piece } : { content: piece });
      if (logprobs) {
        const given = logprobsOf(piece, call.request, logprobTokens);
        logprobTokens -= given.content.length;
        next.choices[0]!.logprobs = given;
      }
      add(next, index === 0 ? options.firstTokenMs : options.chunkIntervalMs);
    }
  }
  const last = chunk({}, answer.finishReason);
  if (answer.stopSequence !== undefined) last.choices[0]!.stop_reason = answer.stopSequence;
  add(last, 0);
  add(usageChunk(base, usage), 0);
  return steps;
}

/**
 * The pieces an answer's text streams in, one per chunk, made one at a time: a word with the space before it (the
 * text split before each space), or, for JSON, which has no spaces to split at, runs of 12 characters, as a model's
 * tokens arrive. An empty text is one empty piece.
 */
class Pieces {
  readonly count: number;
  readonly #text: string;
  readonly #json: boolean;
  #at = 0;

  constructor(text: string, json: boolean) {
    this.#text = text;
    this.#json = json;
    let count = 1;
    if (json) count = Math.max(1, Math.ceil(text.length / 12));
    else for (let at = text.indexOf(' ', 1); at !== -1; at = text.indexOf(' ', at + 1)) count += 1;
    this.count = count;
  }

  next(): string {
    const text = this.#text;
    const from = this.#at;
    let to: number;
    if (this.#json) to = Math.min(from + 12, text.length);
    else {
      to = text.indexOf(' ', from + 1);
      if (to === -1) to = text.length;
    }
    this.#at = to;
    return text.slice(from, to);
  }
}

/**
 * The chunks of a pass-through stream, each made when it is due rather than all at the start: an open stream keeps
 * its answer's text and where it is, not a chunk object and its bytes for every word still to come (10,000 slow
 * streams would keep 28 of each alive for half a minute, and promote them all to the old generation).
 */
interface PassPlan {
  readonly count: number;
  /** How long after the chunk before it (or the request) chunk `index` comes. */
  afterMs(index: number): number;
  /** The next chunk: called once per chunk, in order. */
  next(): PassChunk;
}

/**
 * The pass-through plan: text answers' chunks as bytes (see rawChunks), made as they are due; tool calls and
 * logprobs (rare) as the parsed chunks `plan` makes, all at once.
 */
function passPlan(
  call: ProviderCall,
  options: PlanOptions,
  promptTokens: number,
  cache: PrefixCache,
): PassPlan {
  const begun = begin(call, promptTokens, cache);
  const { answer, base, usage } = begun;
  if (answer.toolCall !== undefined || wantsLogprobs(call.request) || begun.answers.length > 1) {
    const steps = planFor(call, options, begun);
    let at = 0;
    return { count: steps.length, afterMs: (index) => steps[index]!.afterMs, next: () => steps[at++]!.chunk };
  }
  const text = new Pieces(answer.text, answer.structured);
  const bytes = rawChunks(base);
  const { firstTokenMs, chunkIntervalMs } = options;
  // The text's pieces, then the finish reason and the usage, both at once after the last piece.
  const count = text.count + 2;
  let at = 0;
  return {
    count,
    afterMs: (index) => (index === 0 ? firstTokenMs : index < text.count ? chunkIntervalMs : 0),
    next() {
      const index = at++;
      if (index < text.count) return bytes.content(text.next(), index === 0);
      return index === text.count
        ? bytes.finish(answer.finishReason, answer.stopSequence)
        : usageChunk(base, usage);
    },
  };
}

const RAW_END_OF_CONTENT = '},"finish_reason":null}]}';
const RAW_CONTENT_KEY = '"content":';
const RAW_ROLE = '"role":"assistant",';

/**
 * The fast path's text chunks (a content string, with the role on the first, or the finish reason) as the bytes
 * their JSON is, the way an upstream's would arrive, with model and content located, so that the front door copies
 * them rather than encoding an object per chunk. A stream's chunks share id, creation time and model: the JSON up
 * to the delta is made once per stream. The same JSON as JSON.stringify of the canonical chunk (its key order).
 */
function rawChunks(base: ChunkBase): {
  content(text: string, first: boolean): RawChunk;
  finish(reason: FinishReason, stopSequence: string | undefined): RawChunk;
} {
  const head = `{"id":${JSON.stringify(base.id)},"object":"chat.completion.chunk","created":${base.created},"model":`;
  const model = JSON.stringify(base.model);
  const prefix = `${head}${model},"choices":[{"index":0,"delta":{`;
  const prefixBytes = Buffer.byteLength(prefix);
  const modelStart = Buffer.byteLength(head);
  const modelEnd = modelStart + Buffer.byteLength(model);
  return {
    content(text, first) {
      const quoted = JSON.stringify(text);
      const json = `${prefix}${first ? RAW_ROLE : ''}${RAW_CONTENT_KEY}${quoted}${RAW_END_OF_CONTENT}`;
      // A stream's first chunk may be kept to its end (the front door keeps it for a usage chunk it may have to
      // make up): its bytes are their own, not a slice of Buffer's shared 8 KiB pool, which they would keep alive.
      const bytes = first ? ownBytes(json) : Buffer.from(json);
      const textStart = prefixBytes + (first ? RAW_ROLE.length : 0) + RAW_CONTENT_KEY.length + 1;
      const textEnd = bytes.length - RAW_END_OF_CONTENT.length - 1;
      return new RawChunk(bytes, modelStart, modelEnd, -1, -1, textStart, textEnd, quoted.includes('\\'));
    },
    finish(reason, stopSequence) {
      const matched = stopSequence === undefined ? '' : `,"stop_reason":${JSON.stringify(stopSequence)}`;
      const bytes = Buffer.from(`${prefix}},"finish_reason":${JSON.stringify(reason)}${matched}}]}`);
      return new RawChunk(bytes, modelStart, modelEnd, -1, -1, -1, -1, false);
    },
  };
}

/**
 * The fast path: the chunks at their pace, from one timer per stream (refreshed while the pace is the same) rather
 * than an async generator. Chunks due at the same moment (no pause between them) go in one batch, as one upstream
 * read would bring them.
 */
function passThrough(plan: PassPlan, signal: AbortSignal): Promise<PassThroughStream> {
  return new Promise((resolve, reject) => {
    let next = 0;
    let handler: PassThroughHandler | undefined;
    let paused = false;
    let over = false;
    let timer: NodeJS.Timeout | undefined;
    /** The delay the timer was set with: a timer refreshed waits as long again. */
    let timerMs = -1;
    const end = (failure: ProviderError | undefined): void => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      handler!.end(failure);
    };
    const dueNow = (): PassChunk[] => {
      next += 1;
      const batch = [plan.next()];
      while (next < plan.count && plan.afterMs(next) <= 0) {
        next += 1;
        batch.push(plan.next());
      }
      return batch;
    };
    const onAbort = (): void => {
      const aborted = new ProviderError('aborted', 'request aborted');
      if (handler === undefined) {
        clearTimeout(timer);
        reject(aborted);
      } else end(aborted);
    };
    const fire = (): void => {
      if (!handler!.batch(dueNow())) paused = true;
      go();
    };
    // Schedules the next batch, or ends the stream; nothing while paused (resume goes on).
    const go = (): void => {
      if (paused || over || handler === undefined) return;
      if (next === plan.count) return end(undefined);
      const ms = plan.afterMs(next);
      if (timer !== undefined && ms === timerMs) timer.refresh();
      else {
        clearTimeout(timer);
        timer = setTimeout(fire, ms);
        timerMs = ms;
      }
    };
    const stream: PassThroughStream = {
      first: [],
      start(given) {
        handler = given;
        // The first chunks were relayed before the start: the stream, which lives as long as its caller's relay,
        // no longer holds them.
        stream.first.length = 0;
        go();
      },
      resume() {
        paused = false;
        go();
      },
      // The call's abort signal ends it.
      stop() {},
    };
    if (signal.aborted) return reject(new ProviderError('aborted', 'request aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const open = (): void => {
      stream.first.push(...dueNow());
      resolve(stream);
    };
    // No first-token delay: the first chunks are there at once (a timer would wait a millisecond at least).
    const firstMs = plan.afterMs(0);
    if (firstMs <= 0) open();
    else timer = setTimeout(open, firstMs);
  });
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw new ProviderError('aborted', 'request aborted');
  if (ms <= 0) return;
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    throw new ProviderError('aborted', 'request aborted', { cause: error });
  }
}

/** The request's SHA-256 (model, seed, each message's role and content): one string, hashed in one call. */
function digest(request: ChatRequest, choice: number): Buffer {
  const seed = request.body['seed'];
  let text = typeof seed === 'number' ? `${request.model}\u0001${seed}` : request.model;
  // Each further choice (n > 1) is another sample: the first is the answer a request for one choice gets.
  if (choice > 0) text += `\u0002${choice}`;
  for (const message of request.messages) text += `\u0000${message.role}\u0000${message.content ?? ''}`;
  return hash('sha256', text, 'buffer');
}

/** The deterministic answer: a tool call when tools are offered and not yet used (or forced), else text or JSON. */
function compose(request: ChatRequest, choice = 0): Answer {
  const seed = digest(request, choice);
  const known = knownParams(request.body);
  const last = request.messages.at(-1);
  const tool = pickTool(known, last?.role === 'tool');
  if (tool) {
    const args = JSON.stringify(
      instanceOf(tool.function.parameters ?? { type: 'object' }, 'the tool’s parameters'),
    );
    const toolCall: ToolCall = {
      id: `call_${nextId()}`,
      type: 'function',
      function: { name: tool.function.name, arguments: args },
    };
    return {
      text: '',
      toolCall,
      structured: known.responseFormat !== undefined,
      finishReason: 'tool_calls',
      completionTokens: countTextTokens(tool.function.name) + countTextTokens(args) + 3,
    };
  }
  const wordCount = 12 + ((seed[0] ?? 0) % 24);
  const words: string[] = [];
  for (let i = 0; i < wordCount; i++) words.push(WORDS[(seed[i % seed.length]! + i * 7) % WORDS.length]!);
  let text = `${last?.role === 'tool' ? 'From the tool result: ' : ''}${words.join(' ')}.`;
  text = text[0]!.toUpperCase() + text.slice(1);
  const format = known.responseFormat;
  if (format?.type === 'json_object') text = JSON.stringify({ answer: text });
  else if (format?.type === 'json_schema')
    text = JSON.stringify(instanceOf(format.json_schema.schema, 'the response format’s'));
  let finishReason: FinishReason = 'stop';
  let stopSequence: string | undefined;
  if (known.stop) ({ text, stopSequence } = cutAtStop(text, known.stop));
  let tokens = encodeText(text);
  if (known.maxTokens !== undefined && tokens.length > known.maxTokens) {
    tokens = tokens.slice(0, known.maxTokens);
    text = decode(tokens);
    finishReason = 'length';
  }
  if (finishReason === 'length') stopSequence = undefined;
  return {
    text,
    stopSequence,
    toolCall: undefined,
    structured: format !== undefined,
    finishReason,
    completionTokens: tokens.length,
  };
}

/**
 * An instance of a schema the request sent; one the simulator cannot fill within its budget is the request's
 * fault, answered as an upstream answers a schema it refuses: a 400.
 */
function instanceOf(schema: unknown, whose: string): unknown {
  try {
    return schemaInstance(schema);
  } catch (error) {
    if (!(error instanceof SchemaBudgetError)) throw error;
    throw new ProviderError(
      'status',
      `${whose} JSON schema asks for more than the model generates: ${error.message}`,
      { status: 400, cause: error },
    );
  }
}

/** The text up to the first stop sequence it contains (the sequence itself is not sent, as upstreams do). */
function cutAtStop(text: string, stop: string[]): { text: string; stopSequence: string | undefined } {
  let end = text.length;
  let stopSequence: string | undefined;
  for (const sequence of stop) {
    const at = sequence === '' ? -1 : text.indexOf(sequence);
    if (at !== -1 && at < end) {
      end = at;
      stopSequence = sequence;
    }
  }
  return { text: text.slice(0, end), stopSequence };
}

/** `tool_choice`: none → no call; a named function → that one; required → a call even after a tool result. */
function pickTool(known: KnownParams, afterToolResult: boolean): ToolDefinition | undefined {
  const { tools, toolChoice } = known;
  if (!tools?.length || toolChoice === 'none') return undefined;
  if (typeof toolChoice === 'object')
    return tools.find((tool) => tool.function.name === toolChoice.function.name);
  if (toolChoice === 'required') return tools[0];
  return afterToolResult ? undefined : tools[0];
}

const wantsLogprobs = (request: ChatRequest): boolean => request.body['logprobs'] === true;

/**
 * The tokens of one answer that get logprobs: each costs `top_logprobs` + 1 objects, and a 64 KiB JSON answer
 * with 20 alternatives made 11 MB and held the event loop for a second. Short answers are covered whole.
 */
const MAX_LOGPROB_TOKENS = 256;

/**
 * The `logprobs` object of a choice: one entry per token (the first `limit` tokens), with `top_logprobs`
 * alternatives when asked.
 */
function logprobsOf(
  text: string,
  request: ChatRequest,
  limit: number,
): { content: unknown[]; refusal: null } {
  const topRaw = request.body['top_logprobs'];
  const top = typeof topRaw === 'number' && Number.isInteger(topRaw) ? Math.min(Math.max(topRaw, 0), 20) : 0;
  const content = encodeText(text)
    .slice(0, Math.max(0, limit))
    .map((id, index) => {
      const token = decode([id]);
      const entry = (candidate: string, rank: number) => ({
        token: candidate,
        logprob: -(0.01 + ((index * 13 + rank * 7) % 50) / 100) - rank,
        bytes: [...Buffer.from(candidate)],
      });
      const alternatives = [];
      for (let rank = 0; rank < top; rank++)
        alternatives.push(entry(rank === 0 ? token : WORDS[(index + rank) % WORDS.length]!, rank));
      return { ...entry(token, 0), top_logprobs: alternatives };
    });
  return { content, refusal: null };
}
