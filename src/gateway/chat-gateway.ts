import type { Logger } from 'pino';
import { keyBudgetOf, modelRefusal } from '../accounts/key-controls.ts';
import { keyLimitRefusal } from '../accounts/key-status.ts';
import { kindsCostMicros, scaledCosts, worstCaseMicros } from '../billing/pricing.ts';
import { kindsOfUsage, plainKinds, promptOf, type TokenKinds, usageOfKinds } from '../billing/token-kinds.ts';
import type { HoldAsk, HoldBook } from '../billing/hold-book.ts';
import type { Standing } from '../billing/standing.ts';
import type { SettlementQueue } from '../billing/settlement-queue.ts';
import type { Config, ModelConfig } from '../core/config.ts';
import type { Limiter, LimitSet, RateLimits } from '../core/rate-limits.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { OpenedStream } from '../core/provider.ts';
import { openEvents, openFastest } from '../core/answer-stream.ts';
import type { Router } from '../routing/router.ts';
import { GatewayError } from '../core/gateway-error.ts';
import type { Clock } from '../core/ids.ts';
import type { Balance } from '../store/ledger-repo.ts';
import {
  type AccountRecord,
  type ApiKeyRecord,
  limitSubjectOf,
  type Settlement,
  type UsageStatus,
} from '../core/records.ts';
import type { ChatPathStore } from '../store/store.ts';
import type { ChatChunk, ChatCompletion, ChatRequest } from '../core/chat-types.ts';
import { countPromptTokensYielding, countTextTokens } from '../core/count-tokens.ts';
import { knownParams } from '../core/known-params.ts';
import { parseChatRequest } from './parse-chat-request.ts';
import { choicesOf, refuseChoicesFor } from '../core/choices.ts';
import { type PassChunk, RawChunk, RawText } from '../core/raw-chunk.ts';
import type { EventBatch } from '../core/stream-event.ts';
import type { AnswerFacts, StreamSink } from './stream-sink.ts';
import { utcDay } from '../core/time.ts';
import { withoutUpstreamJson } from '../core/upstream-json.ts';
import { formatUsd } from '../core/money.ts';
import {
  completionFacts,
  chunkFacts,
  rawChunkFacts,
  type RequestTrace,
} from '../observability/tracing/request-trace.ts';

/** How long a hold lives if its request never settles (its instance died): then a job releases it. */
export const HOLD_TTL_MS = 60 * 60_000;

export interface CallerContext {
  requestId: string;
  key: ApiKeyRecord;
  account: AccountRecord;
  /** performance.now() when the request arrived. */
  arrivedAt: number;
  /** The request's trace, when tracing is on. */
  trace?: RequestTrace | undefined;
}

/** A request that passed every check and holds its credit: ready to go upstream. */
export interface Admitted {
  ctx: CallerContext;
  request: ChatRequest;
  model: ModelConfig;
  promptTokens: number;
  reservedTokens: number;
  /** The key's rate limits after this admission, for the answer's headers. */
  rateLimits: RateLimits;
}

/** A whole answer and the facts its headers tell. */
export interface CompletedAnswer extends AnswerFacts {
  completion: ChatCompletion;
}

interface Outcome {
  status: UsageStatus;
  /** The tokens by kind; prompt and completion are their sums. */
  kinds: TokenKinds;
  estimated: boolean;
  deployment: string | null;
  provider: string;
  ttftMs: number | null;
}

export interface ChatGatewayOptions {
  config: Config;
  store: ChatPathStore;
  router: Router;
  limiter: Limiter;
  settlements: SettlementQueue;
  holds: HoldBook;
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
  /** The account's limits: its plan's with the operator's overrides (src/billing/effective-limits.ts). */
  limitsOf(account: AccountRecord): LimitSet;
  /** Whether the account may spend; without a balance, the rules no balance changes (src/billing/standing.ts). */
  billingStanding(account: AccountRecord, now: number, balance?: Balance): Standing;
  /** Told of every finished request (the request events stream), when something listens. */
  onFinished?: ((settlement: Settlement) => void) | undefined;
}

const REFUSALS = {
  requests: 'requests per minute',
  tokens: 'tokens per minute',
  daily: 'tokens per day',
  unavailable: 'limits (the limit service is unavailable)',
} as const;

/** The chat pipeline: admit → hold → route → relay → meter → settle. Knows nothing of HTTP. */
export class ChatGateway {
  readonly #o: ChatGatewayOptions;
  /** Keys whose daily count this process has seeded from the store, by UTC day. */
  #seeded = new Set<string>();
  #seededDay = '';

  constructor(options: ChatGatewayOptions) {
    this.#o = options;
  }

  /** Validates, checks the context window and plan, takes rate limits and holds the worst-case cost. */
  async admit(ctx: CallerContext, body: unknown): Promise<Admitted> {
    const { config, limiter, store, clock } = this.#o;
    const { request, model } = parseChatRequest(body, config.models, config.maxMessages);
    const now = clock();
    const { account, key } = ctx;
    ctx.trace?.requested(request, account.id, key.id);
    const notAllowed = modelRefusal(key, model.id);
    if (notAllowed) throw this.#refuse(notAllowed);
    // Cheap refusals before the one expensive step, counting the prompt (the key and account were checked
    // before the body was read; the rate limit needs the count).
    const planStanding = this.#o.billingStanding(account, now);
    if (!planStanding.ok) throw this.#refuse(new GatewayError('payment_required', planStanding.message));
    // Counting stops past the context window: a prompt that cannot fit costs no more than one that just does.
    const { maxTokens, tools } = knownParams(request.body);
    const choices = choicesOf(request);
    refuseChoicesFor(choices, model, config.models, config.providers);
    const room = model.contextWindow - (maxTokens ?? 0);
    const counted = countPromptTokensYielding(request.messages, tools, room);
    const promptTokens = typeof counted === 'number' ? counted : await counted;
    if (promptTokens > room) {
      throw new GatewayError(
        'invalid_request',
        `messages: the prompt (at least ${promptTokens} tokens) plus max_tokens (${maxTokens ?? 0}) exceeds ${model.id}'s context window of ${model.contextWindow} tokens`,
      );
    }
    // Every choice may use max_tokens: the prompt is held once, the answer once per choice.
    const reservedTokens = promptTokens + (maxTokens ?? 0) * choices;
    const limits = this.#o.limitsOf(account);
    const subject = limitSubjectOf(key);
    if (limits.dailyTokens !== null && limiter.seedDaily && this.#unseeded(subject, now))
      await this.#seedDaily(subject, now);
    const asked = { subject, requestId: ctx.requestId, limits, tokens: reservedTokens, now };
    // In memory, admission and the hold below run in one synchronous step: no promise, no turn in between.
    const admission = limiter.admitNow ? limiter.admitNow(asked) : await limiter.admit(asked);
    if (!admission.allowed) {
      const reason = admission.reason ?? 'requests';
      const message =
        reason === 'tokens' && reservedTokens > (limits.tokensPerMinute ?? Infinity)
          ? `this request needs ${reservedTokens} tokens, more than your limit of ${limits.tokensPerMinute} tokens per minute; lower max_tokens or upgrade your plan`
          : `rate limit exceeded: ${REFUSALS[reason]} for this API key; retry after the Retry-After delay or upgrade your plan`;
      throw this.#refuse(
        new GatewayError(reason === 'unavailable' ? 'service_unavailable' : 'rate_limit_exceeded', message, {
          ...(admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {}),
          rateLimits: admission,
        }),
      );
    }
    const holdMicros = worstCaseMicros(model, promptTokens, (maxTokens ?? model.defaultMaxTokens) * choices);
    const { holds } = this.#o;
    const holdFrom = ctx.trace ? performance.now() : 0;
    let held: boolean;
    try {
      const ask: HoldAsk = [
        ctx.requestId,
        account.id,
        holdMicros,
        now,
        now + HOLD_TTL_MS,
        keyBudgetOf(key, now),
      ];
      held = holdMicros === 0 || (holds.holdNow ? holds.holdNow(...ask) : await holds.hold(...ask));
    } catch (error) {
      // The database failed mid-hold (it went away): the hold may have been taken though the answer was lost.
      // A settlement of nothing releases it whenever the database is back. The request was refused for our
      // own outage, so it gives its rate-limit slot back (else an outage would use up the key's limits).
      const admitted = { ctx, request, model, promptTokens, reservedTokens, rateLimits: admission };
      this.#finish(admitted, this.#failed(admitted, false), true);
      throw error;
    }
    if (!held) {
      await limiter.release(subject, ctx.requestId, reservedTokens, now);
      const keyLimited = await keyLimitRefusal(store, this.#o.holds, key, holdMicros, now);
      if (keyLimited)
        throw this.#refuse(new GatewayError('payment_required', keyLimited, { rateLimits: admission }));
      const standing = this.#o.billingStanding(account, now, await store.ledger.balance(account.id, now));
      const message = standing.ok
        ? `insufficient balance: this request may cost up to $${formatUsd(holdMicros, 6)} (lower max_tokens), more than is available`
        : standing.message;
      throw this.#refuse(new GatewayError('payment_required', message, { rateLimits: admission }));
    }
    ctx.trace?.admitted(performance.now() - holdFrom);
    return { ctx, request, model, promptTokens, reservedTokens, rateLimits: admission };
  }

  /**
   * The prompt's tokens as admission counts them (validated as `admit` validates), for `count_tokens`: the key's
   * allowed models apply, and each count takes a request from a window of its own, as large as the key's
   * requests per minute (so counting neither eats the key's calls nor goes unlimited). No tokens, no credit.
   */
  async countPrompt(ctx: CallerContext, body: unknown): Promise<number> {
    const { config, limiter, clock } = this.#o;
    const { request, model } = parseChatRequest(body, config.models, config.maxMessages);
    const notAllowed = modelRefusal(ctx.key, model.id);
    if (notAllowed) throw this.#refuse(notAllowed);
    const requestsPerMinute = this.#o.limitsOf(ctx.account).requestsPerMinute;
    if (requestsPerMinute !== null) {
      const admission = await limiter.admit({
        subject: `${limitSubjectOf(ctx.key)}:count-tokens`,
        requestId: ctx.requestId,
        limits: { requestsPerMinute, tokensPerMinute: null, dailyTokens: null },
        tokens: 0,
        now: clock(),
      });
      if (!admission.allowed) {
        const unavailable = admission.reason === 'unavailable';
        throw this.#refuse(
          new GatewayError(
            unavailable ? 'service_unavailable' : 'rate_limit_exceeded',
            unavailable
              ? `rate limit exceeded: ${REFUSALS.unavailable}`
              : 'rate limit exceeded: token counts per minute for this API key (as many as its requests per minute); retry after the Retry-After delay',
            { ...(admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {}) },
          ),
        );
      }
    }
    return countPromptTokensYielding(request.messages, knownParams(request.body).tools, Infinity);
  }

  /** Whether this process has yet to seed a limit subject's daily count today (checked without a promise). */
  #unseeded(subject: string, now: number): boolean {
    const day = utcDay(now);
    if (day !== this.#seededDay) {
      this.#seeded = new Set();
      this.#seededDay = day;
    }
    return !this.#seeded.has(subject);
  }

  /**
   * Once per limit subject and UTC day in this process (the caller has checked #unseeded in the same turn): the tokens the
   * store already holds for today.
   */
  async #seedDaily(subject: string, now: number): Promise<void> {
    const day = this.#seededDay;
    this.#seeded.add(subject);
    // Settlements of this process not yet committed are already in the limiter; committed ones are in
    // the store. Flushing first makes the two disjoint, so nothing is counted twice.
    await this.#o.settlements.flush();
    const used = await this.#o.store.usage.keyDayTokens(subject, day);
    this.#o.limiter.seedDaily?.(subject, used, now);
  }

  /** A non-streamed completion; the answer's `model` is the public id. */
  async wholeAnswer(admitted: Admitted, signal: AbortSignal): Promise<CompletedAnswer> {
    const { request, model, promptTokens } = admitted;
    let attempted;
    try {
      attempted = await this.#o.router.wholeAnswer(
        request,
        signal,
        model.defaultMaxTokens,
        admitted.ctx.account.id,
        admitted.ctx.trace,
      );
    } catch (error) {
      this.#finish(admitted, this.#failed(admitted, signal.aborted));
      throw error;
    }
    const upstreamMs = performance.now() - attempted.upstreamStartedAt;
    const completion = attempted.result;
    admitted.ctx.trace?.answered(completionFacts(completion));
    completion.model = request.model;
    const usage = completion.usage;
    const estimated = !isUsage(usage);
    const kinds = estimated ? plainKinds(promptTokens, completionTokensOf(completion)) : kindsOfUsage(usage);
    if (estimated) {
      withoutUpstreamJson(completion);
      completion.usage = usageOfKinds(kinds);
    }
    const { cost, journaled } = this.#finish(admitted, {
      status: 'ok',
      kinds,
      estimated,
      deployment: attempted.deployment,
      provider: attempted.provider,
      ttftMs: null,
    });
    // Journaled where a surviving instance finds it before the answer leaves (holds in Redis), so an answer
    // sent is charged even if this instance dies before its settlement commits.
    await journaled;
    const overheadMs = performance.now() - admitted.ctx.arrivedAt - upstreamMs;
    this.#o.metrics.overhead.observe(overheadMs / 1000);
    return {
      completion,
      rateLimits: admitted.rateLimits,
      overheadMs,
      costMicros: cost,
      costBreakdown: { kinds, scaled: scaledCosts(model, kinds) },
    };
  }

  /**
   * Streams the answer to the sink in the form its door took (canonical events, or the fast lane's chunks), each
   * upstream read's batch as it arrives. Failures before the first read throw (the caller answers with an error
   * status); after it, they end the stream with one error event.
   */
  async streamAnswer(admitted: Admitted, sink: StreamSink): Promise<void> {
    const { request, model, promptTokens, ctx } = admitted;
    const abort = new AbortController();
    sink.onClose(() => abort.abort());
    let opened;
    try {
      opened = await this.#o.router.openStream(
        request,
        abort.signal,
        model.defaultMaxTokens,
        ctx.account.id,
        ctx.trace,
        sink.passThrough !== undefined ? openFastest : openEvents,
      );
    } catch (error) {
      this.#finish(admitted, this.#failed(admitted, abort.signal.aborted));
      throw error;
    }
    const firstAt = performance.now();
    const overheadMs = opened.upstreamStartedAt - ctx.arrivedAt;
    this.#o.metrics.overhead.observe(overheadMs / 1000);
    sink.open({ rateLimits: admitted.rateLimits, overheadMs, costMicros: undefined });

    const meter = new StreamMeter(request.model, ctx.trace);
    const answer = opened.result;
    let status: UsageStatus = 'ok';
    const failure =
      answer.lane === 'chunks'
        ? await this.#relay(answer.stream, sink, (batch) => {
            meter.chunks(batch);
            return sink.passThrough!(batch, request.model);
          })
        : await this.#relay(answer.stream, sink, (batch) => {
            meter.events(batch);
            return sink.events(batch);
          });
    if (failure !== undefined && !abort.signal.aborted && !sink.closed) {
      status = 'error';
      this.#o.logger.warn(
        { err: failure, requestId: ctx.requestId, deployment: opened.deployment },
        'stream failed after its first chunk',
      );
      sink.fail(
        new GatewayError('provider_error', 'the upstream stream failed mid-way; the answer is incomplete', {
          cause: failure,
        }),
      );
    }
    if (sink.closed) status = 'cancelled';
    // A stream left before its end lets go of its upstream call.
    if (status !== 'ok') answer.stream.stop();
    const usage = meter.usage;
    const estimated = !isUsage(usage);
    const kinds = isUsage(usage)
      ? kindsOfUsage(usage)
      : plainKinds(promptTokens, countTextTokens(meter.generated()));
    if (status === 'ok') sink.complete(usageOfKinds(kinds));
    const { journaled } = this.#finish(admitted, {
      status,
      kinds,
      estimated,
      deployment: opened.deployment,
      provider: opened.provider,
      ttftMs: firstAt - ctx.arrivedAt,
    });
    // The last byte waits for the journal (holds in Redis): an answer sent is charged even if we die now.
    if (journaled !== undefined) await journaled;
    sink.end();
  }

  /**
   * The one relay, whatever the form: each upstream read's batch is metered and handed to the sink in one call
   * (`write`), from the stream's own callback (no promise per batch on a push-based reader); a client not keeping
   * up pauses the upstream until it drains. Resolves with the failure that ended the stream, or undefined after
   * its terminal event.
   */
  #relay<B>(stream: OpenedStream<B>, sink: StreamSink, write: (batch: B) => boolean): Promise<unknown> {
    const idleMs = this.#o.config.timeouts.idleStreamMs;
    const relay = (batch: B): boolean => {
      // A client that left: nothing more is written, and the upstream call is let go of.
      if (sink.closed) {
        stream.stop();
        return true;
      }
      return write(batch);
    };
    // One promise per stream, its end: the first read's batch goes out in this call unless the client is full.
    const follow = (): Promise<unknown> =>
      new Promise((resolve) => {
        stream.start({
          batch(batch) {
            if (relay(batch)) return true;
            void sink.drain(idleMs).then(() => stream.resume());
            return false;
          },
          end: resolve,
        });
      });
    let opened: boolean;
    try {
      opened = relay(stream.first);
    } catch (error) {
      return Promise.resolve(error ?? new Error('stream failed'));
    }
    return opened ? follow() : sink.drain(idleMs).then(follow);
  }

  /** A request that got no answer: nothing generated; a client that left after it went upstream pays its prompt. */
  #failed(admitted: Admitted, cancelled: boolean): Outcome {
    return {
      status: cancelled ? 'cancelled' : 'error',
      kinds: plainKinds(cancelled ? admitted.promptTokens : 0, 0),
      estimated: cancelled,
      deployment: null,
      provider: 'none',
      ttftMs: null,
    };
  }

  /**
   * Meters and queues the settlement (which releases the hold); reconciles limits, or gives the request's
   * rate-limit slot back (`giveBack`: refused for our own outage). Returns the cost, and when the hold book
   * has journaled the finished request (holds in Redis; at once otherwise).
   */
  #finish(
    admitted: Admitted,
    outcome: Outcome,
    giveBack = false,
  ): { cost: number; journaled: Promise<void> | undefined } {
    const { ctx, request, model, reservedTokens } = admitted;
    const { clock, settlements, limiter, metrics, logger, holds } = this.#o;
    const now = clock();
    const { kinds } = outcome;
    const cost = kindsCostMicros(model, kinds);
    const promptTokens = promptOf(kinds);
    const settlement: Settlement = {
      requestId: ctx.requestId,
      accountId: ctx.account.id,
      keyId: ctx.key.id,
      model: request.model,
      deployment: outcome.deployment,
      promptTokens,
      completionTokens: kinds.output,
      cachedInputTokens: kinds.cachedInput,
      cacheWriteTokens: kinds.cacheWrite5m + kinds.cacheWrite1h,
      cacheWrite1hTokens: kinds.cacheWrite1h,
      reasoningTokens: kinds.reasoning,
      estimated: outcome.estimated,
      costMicros: cost,
      status: outcome.status,
      latencyMs: performance.now() - ctx.arrivedAt,
      ttftMs: outcome.ttftMs,
      createdAt: now,
    };
    settlements.add(settlement);
    ctx.trace?.finished(settlement);
    this.#o.onFinished?.(settlement);
    const journaled = holds.finished?.(settlement);
    const used = promptTokens + kinds.output;
    if (!giveBack && limiter.reconcileNow)
      limiter.reconcileNow(limitSubjectOf(ctx.key), ctx.requestId, reservedTokens, used, now);
    else
      (giveBack
        ? limiter.release(limitSubjectOf(ctx.key), ctx.requestId, reservedTokens, now)
        : limiter.reconcile(limitSubjectOf(ctx.key), ctx.requestId, reservedTokens, used, now)
      ).catch((error: unknown) => logger.warn({ err: error }, 'rate-limit reconcile failed'));
    metrics.recordRequest(
      request.model,
      outcome.provider,
      outcome.status,
      (performance.now() - ctx.arrivedAt) / 1000,
      outcome.ttftMs === null ? null : outcome.ttftMs / 1000,
      promptTokens,
      kinds.output,
    );
    return { cost, journaled };
  }

  #refuse(error: GatewayError): GatewayError {
    this.#o.metrics.rejected.inc({ code: error.code });
    return error;
  }
}

/**
 * What a streamed answer counts toward its charge, from either form: the upstream's usage, or the text to estimate
 * from; and the trace's facts. Chunks get the public model id here.
 */
class StreamMeter {
  usage: ChatChunk['usage'];
  #generated = '';
  /** Raw chunks' text stays bytes until the end (it is needed only if the upstream sends no usage). */
  readonly #rawText = new RawText();
  readonly #model: string;
  readonly #trace: RequestTrace | undefined;

  constructor(model: string, trace: RequestTrace | undefined) {
    this.#model = model;
    this.#trace = trace;
  }

  events(batch: EventBatch): void {
    for (const event of batch) {
      switch (event.type) {
        case 'text':
          this.#generated += event.text;
          break;
        case 'tool':
          this.#generated += (event.name ?? '') + event.args;
          break;
        case 'usage':
          this.usage = event.usage;
          break;
        case 'start':
          this.#trace?.answered({ id: event.id });
          break;
        case 'finish':
          this.#trace?.answered({ finishReasons: [event.reason] });
          break;
        default:
          break;
      }
    }
  }

  chunks(batch: readonly PassChunk[]): void {
    for (let i = 0; i < batch.length; i++) {
      const chunk = batch[i]!;
      if (chunk instanceof RawChunk) {
        this.#rawText.add(chunk);
        this.#trace?.answered(rawChunkFacts(chunk));
      } else {
        this.#generated += this.#rawText.take();
        this.#chunk(chunk);
      }
    }
  }

  /** The answer's text so far, for an estimate. */
  generated(): string {
    this.#generated += this.#rawText.take();
    return this.#generated;
  }

  #chunk(chunk: ChatChunk): void {
    this.#trace?.answered(chunkFacts(chunk));
    chunk.model = this.#model;
    if (isUsage(chunk.usage)) this.usage = chunk.usage;
    for (const choice of chunk.choices) {
      const delta = choice.delta;
      if (typeof delta?.content === 'string') this.#generated += delta.content;
      for (const call of delta?.tool_calls ?? [])
        this.#generated += (call.function?.name ?? '') + (call.function?.arguments ?? '');
    }
  }
}

function isUsage(
  value: unknown,
): value is { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const usage = value as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  return typeof usage?.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number';
}

function completionTokensOf(completion: ChatCompletion): number {
  let text = '';
  for (const choice of completion.choices) {
    text += choice.message.content ?? '';
    for (const call of choice.message.tool_calls ?? []) text += call.function.name + call.function.arguments;
  }
  return countTextTokens(text);
}
