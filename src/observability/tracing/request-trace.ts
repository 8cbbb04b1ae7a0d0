import {
  type Attributes,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import type { TextMapPropagator } from '@opentelemetry/api';
import type { AttemptObserver, AttemptWatch } from '../../routing/attempt-observer.ts';
import { GEN_AI, PROVIDER_NAMES, TOLLGATE } from './gen-ai-attributes.ts';
import type { ChatBody } from '../../core/chat-types.ts';
import { DEFAULT_TEMPERATURE, knownParams } from '../../core/known-params.ts';

/** What a request's trace needs from the tracer: kept apart so a trace is made without knowing the SDK. */
export interface TraceKit {
  tracer: Tracer;
  propagator: TextMapPropagator;
  /** A provider's configured type by its id, for gen_ai.provider.name. */
  providerTypes: ReadonlyMap<string, string>;
}

/** The facts of a finished request that its span records (the usage record's; never content). */
export interface TracedOutcome {
  status: string;
  deployment: string | null;
  promptTokens: number;
  completionTokens: number;
  estimated: boolean;
  costMicros: number;
  ttftMs: number | null;
}

/** The answer's own facts, as the upstream gave them. */
export interface TracedAnswer {
  id?: string | undefined;
  model?: string | undefined;
  finishReasons?: readonly string[] | undefined;
}

const setter = {
  set(carrier: Record<string, string>, key: string, value: string): void {
    carrier[key] = value;
  },
};

/**
 * One request's span (SERVER, from arrival to the answer's last byte) and a CLIENT child span per upstream attempt.
 * Every method takes plain facts; none takes or keeps a message, a prompt or an answer's text.
 */
export class RequestTrace implements AttemptObserver {
  readonly #kit: TraceKit;
  readonly #span: Span;
  readonly #context: Context;
  readonly #startedAt: number;
  #model = '';
  #requestAttributes: Attributes = {};
  /** The attempt that answered: ended with the request, since the answer streams on after its first chunk. */
  #answering: { span: Span; provider: string } | undefined;
  #attempts = 0;
  #response: TracedAnswer = {};

  constructor(kit: TraceKit, parent: Context, door: string, requestId: string, startedAt: number) {
    this.#kit = kit;
    this.#startedAt = startedAt;
    this.#span = kit.tracer.startSpan(
      'chat',
      {
        kind: SpanKind.SERVER,
        startTime: performance.timeOrigin + startedAt,
        attributes: { [GEN_AI.operation]: 'chat', [TOLLGATE.door]: door, [TOLLGATE.requestId]: requestId },
      },
      parent,
    );
    this.#context = trace.setSpan(parent, this.#span);
  }

  /** The request was read: its model and parameters (never its messages), and who asked. */
  requested(request: { model: string; body: ChatBody }, accountId: string, keyId: string): void {
    this.#model = request.model;
    this.#span.updateName(`chat ${request.model}`);
    const attributes: Attributes = { [GEN_AI.operation]: 'chat', [GEN_AI.requestModel]: request.model };
    const known = knownParams(request.body);
    if (known.maxTokens !== undefined) attributes[GEN_AI.maxTokens] = known.maxTokens;
    attributes[GEN_AI.temperature] = known.temperature ?? DEFAULT_TEMPERATURE;
    this.#requestAttributes = attributes;
    this.#span.setAttributes(attributes);
    this.#span.setAttributes({ [TOLLGATE.accountId]: accountId, [TOLLGATE.keyId]: keyId });
  }

  /** Admitted: from arrival to here, and of that the credit hold's time. */
  admitted(holdMs: number): void {
    this.#span.setAttributes({
      [TOLLGATE.admissionMs]: performance.now() - this.#startedAt,
      [TOLLGATE.holdMs]: holdMs,
    });
  }

  attempt(deployment: string, provider: string, retry: number): AttemptWatch {
    this.#attempts = retry + 1;
    const providerName = PROVIDER_NAMES[this.#kit.providerTypes.get(provider) ?? ''] ?? provider;
    const span = this.#kit.tracer.startSpan(
      this.#model ? `chat ${this.#model}` : 'chat',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          ...this.#requestAttributes,
          [GEN_AI.provider]: providerName,
          [TOLLGATE.deployment]: deployment,
          [TOLLGATE.retry]: retry,
        },
      },
      this.#context,
    );
    const headers: Record<string, string> = {};
    this.#kit.propagator.inject(trace.setSpan(this.#context, span), headers, setter);
    return {
      headers,
      succeeded: () => {
        this.#answering = { span, provider: providerName };
      },
      failed: (kind) => {
        span.setAttributes({ [GEN_AI.errorType]: kind, [TOLLGATE.upstreamStatus]: kind });
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
    };
  }

  /** The upstream's id, model and finish reasons, as they arrive (a stream's come in pieces). */
  answered(answer: TracedAnswer): void {
    if (answer.id !== undefined) this.#response.id = answer.id;
    if (answer.model !== undefined) this.#response.model = answer.model;
    if (answer.finishReasons?.length)
      this.#response.finishReasons = [...(this.#response.finishReasons ?? []), ...answer.finishReasons];
  }

  /** The request's metered outcome (what its usage record says). */
  finished(outcome: TracedOutcome): void {
    const usage: Attributes = {
      [GEN_AI.inputTokens]: outcome.promptTokens,
      [GEN_AI.outputTokens]: outcome.completionTokens,
    };
    const { id, model, finishReasons } = this.#response;
    if (id !== undefined) usage[GEN_AI.responseId] = id;
    if (model !== undefined) usage[GEN_AI.responseModel] = model;
    if (finishReasons) usage[GEN_AI.finishReasons] = finishReasons;
    this.#span.setAttributes(usage);
    this.#span.setAttributes({
      [TOLLGATE.status]: outcome.status,
      [TOLLGATE.costUsd]: outcome.costMicros / 1_000_000,
      [TOLLGATE.estimated]: outcome.estimated,
      [TOLLGATE.attempts]: this.#attempts,
    });
    if (outcome.deployment !== null) this.#span.setAttribute(TOLLGATE.deployment, outcome.deployment);
    if (outcome.ttftMs !== null) this.#span.setAttribute(TOLLGATE.ttftMs, outcome.ttftMs);
    if (this.#answering) {
      this.#span.setAttribute(GEN_AI.provider, this.#answering.provider);
      this.#answering.span.setAttributes(usage);
    }
  }

  /** The request failed with this error code and HTTP status. */
  failed(code: string, status: number): void {
    this.#span.setAttributes({
      [TOLLGATE.errorCode]: code,
      [GEN_AI.errorType]: code,
      'http.response.status_code': status,
    });
    this.#span.setStatus({ code: SpanStatusCode.ERROR });
  }

  /** The answer's last byte went (or the request ended otherwise). */
  end(): void {
    this.#answering?.span.end();
    this.#answering = undefined;
    this.#span.end();
  }
}

/** A whole answer's id, model and finish reasons. */
export function completionFacts(completion: {
  id?: unknown;
  model?: unknown;
  choices: readonly { finish_reason?: unknown }[];
}): TracedAnswer {
  const reasons: string[] = [];
  for (const choice of completion.choices)
    if (typeof choice.finish_reason === 'string') reasons.push(choice.finish_reason);
  return {
    id: typeof completion.id === 'string' ? completion.id : undefined,
    model: typeof completion.model === 'string' ? completion.model : undefined,
    finishReasons: reasons,
  };
}

/** A streamed chunk's id and model (the first one's are kept) and any finish reason it carries. */
export const chunkFacts = completionFacts;

const ID = Buffer.from('"id":"');
const FINISH = Buffer.from('"finish_reason":"');

/**
 * A pass-through chunk's id, model and finish reason, read from its bytes (the chunk is not parsed on that path):
 * only string values are taken, and only these three members.
 */
export function rawChunkFacts(chunk: { bytes: Buffer; modelStart: number; modelEnd: number }): TracedAnswer {
  const { bytes } = chunk;
  const reason = stringAfter(bytes, FINISH);
  return {
    id: stringAfter(bytes, ID),
    model:
      chunk.modelStart >= 0 ? bytes.toString('utf8', chunk.modelStart + 1, chunk.modelEnd - 1) : undefined,
    finishReasons: reason === undefined ? undefined : [reason],
  };
}

function stringAfter(bytes: Buffer, key: Buffer): string | undefined {
  const at = bytes.indexOf(key);
  if (at < 0) return undefined;
  const start = at + key.length;
  const end = bytes.indexOf(0x22, start);
  return end < 0 ? undefined : bytes.toString('utf8', start, Math.min(end, start + 128));
}
