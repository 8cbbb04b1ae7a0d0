import type { Logger } from 'pino';
import { keyBudgetOf, modelRefusal } from '../accounts/key-controls.ts';
import { keyLimitRefusal } from '../accounts/key-status.ts';
import { costMicros } from '../billing/pricing.ts';
import type { HoldBook } from '../billing/hold-book.ts';
import type { Standing } from '../billing/standing.ts';
import type { SettlementQueue } from '../billing/settlement-queue.ts';
import type { Config, ModelConfig } from '../config/config.ts';
import type { Limiter, LimitSet } from '../limits/limiter.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Router } from '../routing/router.ts';
import { GatewayError } from '../shared/gateway-error.ts';
import type { Clock } from '../shared/ids.ts';
import type { Balance } from '../store/ledger-repo.ts';
import type { AccountRecord, ApiKeyRecord, UsageStatus } from '../store/records.ts';
import type { Store } from '../store/store.ts';
import type { ChatChunk, ChatCompletion, ChatRequest } from './chat-types.ts';
import { countPromptTokensYielding, countTextTokens } from './count-tokens.ts';
import { parseChatRequest } from './parse-chat-request.ts';
import { rateLimitHeaders } from './rate-limit-headers.ts';
import type { StreamSink } from './stream-sink.ts';
import { utcDay } from '../shared/time.ts';
import { formatUsd } from '../shared/money.ts';

/** How long a hold lives if its request never settles (its instance died): then a job releases it. */
export const HOLD_TTL_MS = 60 * 60_000;

export interface CallerContext {
  requestId: string;
  key: ApiKeyRecord;
  account: AccountRecord;
  /** performance.now() when the request arrived. */
  arrivedAt: number;
}

/** A request that passed every check and holds its credit: ready to go upstream. */
export interface Admitted {
  ctx: CallerContext;
  request: ChatRequest;
  model: ModelConfig;
  promptTokens: number;
  reservedTokens: number;
  headers: Record<string, string>;
}

interface Outcome {
  status: UsageStatus;
  promptTokens: number;
  completionTokens: number;
  estimated: boolean;
  deployment: string | null;
  provider: string;
  ttftMs: number | null;
}

export interface ChatGatewayOptions {
  config: Config;
  store: Store;
  router: Router;
  limiter: Limiter;
  settlements: SettlementQueue;
  holds: HoldBook;
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
  /** The account's limits: its plan's with the operator's overrides (src/limits/effective-limits.ts). */
  limitsOf(account: AccountRecord): LimitSet;
  /** Whether the account may spend; without a balance, the rules no balance changes (src/billing/standing.ts). */
  billingStanding(account: AccountRecord, now: number, balance?: Balance): Standing;
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
    const notAllowed = modelRefusal(key, model.id);
    if (notAllowed) throw this.#refuse(notAllowed);
    // Cheap refusals before the one expensive step, counting the prompt (the key and account were checked
    // before the body was read; the rate limit needs the count).
    const planStanding = this.#o.billingStanding(account, now);
    if (!planStanding.ok) throw this.#refuse(new GatewayError('payment_required', planStanding.message));
    // Counting stops past the context window: a prompt that cannot fit costs no more than one that just does.
    const room = model.contextWindow - (request.maxTokens ?? 0);
    const counted = countPromptTokensYielding(request.messages, request.tools, room);
    const promptTokens = typeof counted === 'number' ? counted : await counted;
    if (promptTokens > room) {
      throw new GatewayError(
        'invalid_request',
        `messages: the prompt (at least ${promptTokens} tokens) plus max_tokens (${request.maxTokens ?? 0}) exceeds ${model.id}'s context window of ${model.contextWindow} tokens`,
      );
    }
    const reservedTokens = promptTokens + (request.maxTokens ?? 0);
    const limits = this.#o.limitsOf(account);
    if (limits.dailyTokens !== null && limiter.seedDaily) await this.#seedDaily(key.id, now);
    const admission = await limiter.admit({
      subject: key.id,
      requestId: ctx.requestId,
      limits,
      tokens: reservedTokens,
      now,
    });
    const headers = rateLimitHeaders(admission);
    if (!admission.allowed) {
      const reason = admission.reason ?? 'requests';
      const message =
        reason === 'tokens' && reservedTokens > (limits.tokensPerMinute ?? Infinity)
          ? `this request needs ${reservedTokens} tokens, more than your limit of ${limits.tokensPerMinute} tokens per minute; lower max_tokens or upgrade your plan`
          : `rate limit exceeded: ${REFUSALS[reason]} for this API key; retry after the Retry-After delay or upgrade your plan`;
      throw this.#refuse(
        new GatewayError(reason === 'unavailable' ? 'service_unavailable' : 'rate_limit_exceeded', message, {
          ...(admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {}),
          headers,
        }),
      );
    }
    const holdMicros = costMicros(model, promptTokens, request.maxTokens ?? model.defaultMaxTokens);
    let held: boolean;
    try {
      held =
        holdMicros === 0 ||
        (await this.#o.holds.hold(
          ctx.requestId,
          account.id,
          holdMicros,
          now,
          now + HOLD_TTL_MS,
          keyBudgetOf(key, now),
        ));
    } catch (error) {
      // The database failed mid-hold (it went away): the hold may have been taken though the answer was lost.
      // A settlement of nothing releases it whenever the database is back. The request was refused for our
      // own outage, so it gives its rate-limit slot back (else an outage would use up the key's limits).
      const admitted = { ctx, request, model, promptTokens, reservedTokens, headers };
      this.#finish(admitted, this.#failed(admitted, false), true);
      throw error;
    }
    if (!held) {
      await limiter.release(key.id, ctx.requestId, reservedTokens, now);
      const keyLimited = await keyLimitRefusal(store, this.#o.holds, key, holdMicros, now);
      if (keyLimited) throw this.#refuse(new GatewayError('payment_required', keyLimited, { headers }));
      const standing = this.#o.billingStanding(account, now, await store.ledger.balance(account.id, now));
      const message = standing.ok
        ? `insufficient balance: this request may cost up to $${formatUsd(holdMicros, 6)} (lower max_tokens), more than is available`
        : standing.message;
      throw this.#refuse(new GatewayError('payment_required', message, { headers }));
    }
    return { ctx, request, model, promptTokens, reservedTokens, headers };
  }

  /** The prompt's tokens as admission counts them (validated as `admit` validates); nothing is taken or held. */
  async countPrompt(body: unknown): Promise<number> {
    const { request } = parseChatRequest(body, this.#o.config.models, this.#o.config.maxMessages);
    return countPromptTokensYielding(request.messages, request.tools, Infinity);
  }

  /** Once per key and UTC day in this process: the tokens the store already holds for today. */
  async #seedDaily(keyId: string, now: number): Promise<void> {
    const day = utcDay(now);
    if (day !== this.#seededDay) {
      this.#seeded = new Set();
      this.#seededDay = day;
    }
    if (this.#seeded.has(keyId)) return;
    this.#seeded.add(keyId);
    // Settlements of this process not yet committed are already in the limiter; committed ones are in
    // the store. Flushing first makes the two disjoint, so nothing is counted twice.
    await this.#o.settlements.flush();
    const used = await this.#o.store.usage.keyDayTokens(keyId, day);
    this.#o.limiter.seedDaily?.(keyId, used, now);
  }

  /** A non-streamed completion; the answer's `model` is the public id. */
  async complete(
    admitted: Admitted,
    signal: AbortSignal,
  ): Promise<{ completion: ChatCompletion; headers: Record<string, string> }> {
    const { request, model, promptTokens } = admitted;
    let attempted;
    try {
      attempted = await this.#o.router.complete(request, signal, model.defaultMaxTokens);
    } catch (error) {
      this.#finish(admitted, this.#failed(admitted, signal.aborted));
      throw error;
    }
    const upstreamMs = performance.now() - attempted.upstreamStartedAt;
    const completion = attempted.result;
    completion.model = request.model;
    const usage = completion.usage;
    const estimated = !isUsage(usage);
    const prompt = estimated ? promptTokens : usage.prompt_tokens;
    const generated = estimated ? completionTokensOf(completion) : usage.completion_tokens;
    if (estimated)
      completion.usage = {
        prompt_tokens: prompt,
        completion_tokens: generated,
        total_tokens: prompt + generated,
      };
    const cost = this.#finish(admitted, {
      status: 'ok',
      promptTokens: prompt,
      completionTokens: generated,
      estimated,
      deployment: attempted.deployment,
      provider: attempted.provider,
      ttftMs: null,
    });
    const overheadMs = performance.now() - admitted.ctx.arrivedAt - upstreamMs;
    this.#o.metrics.overhead.observe(overheadMs / 1000);
    return { completion, headers: { ...admitted.headers, ...answerHeaders(overheadMs, cost) } };
  }

  /**
   * Streams the answer to the sink chunk for chunk as the upstream sends it. Failures before the first chunk
   * throw (the caller answers with an error status); after it, they end the stream with one error event.
   */
  async stream(admitted: Admitted, sink: StreamSink): Promise<void> {
    const { request, model, promptTokens, ctx } = admitted;
    const abort = new AbortController();
    sink.onClose(() => abort.abort());
    let opened;
    try {
      opened = await this.#o.router.openStream(request, abort.signal, model.defaultMaxTokens);
    } catch (error) {
      this.#finish(admitted, this.#failed(admitted, abort.signal.aborted));
      throw error;
    }
    const firstAt = performance.now();
    const overheadMs = opened.upstreamStartedAt - ctx.arrivedAt;
    this.#o.metrics.overhead.observe(overheadMs / 1000);
    sink.open({ ...admitted.headers, ...answerHeaders(overheadMs, undefined) });

    const relay = { generated: '', usage: undefined as ChatChunk['usage'] };
    let status: UsageStatus = 'ok';
    const { first, rest } = opened.result;
    try {
      await this.#relay(first, request, sink, relay);
      for (;;) {
        const next = await rest.next();
        if (next.done) break;
        if (sink.closed) break;
        await this.#relay(next.value, request, sink, relay);
      }
    } catch (error) {
      if (!abort.signal.aborted && !sink.closed) {
        status = 'error';
        const failure = new GatewayError(
          'provider_error',
          'the upstream stream failed mid-way; the answer is incomplete',
          { cause: error },
        );
        this.#o.logger.warn(
          { err: error, requestId: ctx.requestId, deployment: opened.deployment },
          'stream failed after its first chunk',
        );
        sink.fail(failure);
      }
    }
    if (sink.closed) status = 'cancelled';
    // A stream left before its end lets go of its upstream call (a no-op for one that already failed): a body
    // nobody reads is paused, and a paused body's idle timer does not run.
    if (status !== 'ok') void rest.return?.().catch(() => {});
    const estimated = !isUsage(relay.usage);
    const prompt = isUsage(relay.usage) ? relay.usage.prompt_tokens : promptTokens;
    const generated = isUsage(relay.usage) ? relay.usage.completion_tokens : countTextTokens(relay.generated);
    if (status === 'ok')
      sink.complete({
        prompt_tokens: prompt,
        completion_tokens: generated,
        total_tokens: prompt + generated,
      });
    sink.end();
    this.#finish(admitted, {
      status,
      promptTokens: prompt,
      completionTokens: generated,
      estimated,
      deployment: opened.deployment,
      provider: opened.provider,
      ttftMs: firstAt - ctx.arrivedAt,
    });
  }

  async #relay(
    chunk: ChatChunk,
    request: ChatRequest,
    sink: StreamSink,
    state: { generated: string; usage: ChatChunk['usage'] },
  ): Promise<void> {
    chunk.model = request.model;
    if (isUsage(chunk.usage)) state.usage = chunk.usage;
    for (const choice of chunk.choices) {
      const delta = choice.delta;
      if (typeof delta?.content === 'string') state.generated += delta.content;
      for (const call of delta?.tool_calls ?? [])
        state.generated += (call.function?.name ?? '') + (call.function?.arguments ?? '');
    }
    if (!sink.chunk(chunk)) await sink.drain(this.#o.config.timeouts.idleStreamMs);
  }

  /** A request that got no answer: nothing generated; a client that left after it went upstream pays its prompt. */
  #failed(admitted: Admitted, cancelled: boolean): Outcome {
    return {
      status: cancelled ? 'cancelled' : 'error',
      promptTokens: cancelled ? admitted.promptTokens : 0,
      completionTokens: 0,
      estimated: cancelled,
      deployment: null,
      provider: 'none',
      ttftMs: null,
    };
  }

  /**
   * Meters and queues the settlement (which releases the hold); reconciles limits, or gives the request's
   * rate-limit slot back (`giveBack`: refused for our own outage). Returns the cost.
   */
  #finish(admitted: Admitted, outcome: Outcome, giveBack = false): number {
    const { ctx, request, model, reservedTokens } = admitted;
    const { clock, settlements, limiter, metrics, logger } = this.#o;
    const now = clock();
    const cost = costMicros(model, outcome.promptTokens, outcome.completionTokens);
    settlements.add({
      requestId: ctx.requestId,
      accountId: ctx.account.id,
      keyId: ctx.key.id,
      model: request.model,
      deployment: outcome.deployment,
      promptTokens: outcome.promptTokens,
      completionTokens: outcome.completionTokens,
      estimated: outcome.estimated,
      costMicros: cost,
      status: outcome.status,
      latencyMs: performance.now() - ctx.arrivedAt,
      ttftMs: outcome.ttftMs,
      createdAt: now,
    });
    (giveBack
      ? limiter.release(ctx.key.id, ctx.requestId, reservedTokens, now)
      : limiter.reconcile(
          ctx.key.id,
          ctx.requestId,
          reservedTokens,
          outcome.promptTokens + outcome.completionTokens,
          now,
        )
    ).catch((error: unknown) => logger.warn({ err: error }, 'rate-limit reconcile failed'));
    metrics.recordRequest(
      request.model,
      outcome.provider,
      outcome.status,
      (performance.now() - ctx.arrivedAt) / 1000,
      outcome.ttftMs === null ? null : outcome.ttftMs / 1000,
      outcome.promptTokens,
      outcome.completionTokens,
    );
    return cost;
  }

  #refuse(error: GatewayError): GatewayError {
    this.#o.metrics.rejected.inc({ code: error.code });
    return error;
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

function answerHeaders(overheadMs: number, cost: number | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'x-tollgate-overhead-ms': overheadMs.toFixed(3) };
  if (cost !== undefined) headers['x-tollgate-cost-usd'] = formatUsd(cost, 6);
  return headers;
}
