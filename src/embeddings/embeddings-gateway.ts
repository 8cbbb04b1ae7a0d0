import { keyBudgetOf, modelRefusal } from '../accounts/key-controls.ts';
import { keyLimitRefusal } from '../accounts/key-status.ts';
import { costMicros } from '../billing/pricing.ts';
import type { HoldAsk } from '../billing/hold-book.ts';
import type { CallerContext, ChatGatewayOptions } from '../gateway/chat-gateway.ts';
import { HOLD_TTL_MS } from '../gateway/chat-gateway.ts';
import { countTextTokens } from '../core/count-tokens.ts';
import type { RateLimits } from '../core/rate-limits.ts';
import { ProviderError } from '../core/provider-error.ts';
import { sanitizeUpstreamMessage } from '../routing/sanitize-upstream-message.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { formatUsd } from '../core/money.ts';
import { limitSubjectOf, type Settlement, type UsageStatus } from '../core/records.ts';
import { createEmbedder, type Embedder, type EmbeddingInput } from './embedders.ts';
import type { EmbeddingModelConfig } from '../core/config.ts';

/** The most inputs one request may hold (OpenAI's limit). */
export const MAX_EMBEDDING_INPUTS = 2_048;

/** A parsed POST /v1/embeddings body. */
export interface EmbeddingsRequest {
  model: EmbeddingModelConfig;
  inputs: EmbeddingInput[];
  base64: boolean;
  dimensions: number;
  dimensionsAsked: boolean;
}

export interface EmbeddingsAnswer {
  body: {
    object: 'list';
    data: { object: 'embedding'; index: number; embedding: number[] | string }[];
    model: string;
    usage: { prompt_tokens: number; total_tokens: number };
  };
  rateLimits: RateLimits;
  costMicros: number;
  overheadMs: number;
}

const invalid = (message: string, param: string): GatewayError =>
  new GatewayError('invalid_request', message, { param });

/**
 * POST /v1/embeddings: parse, count the inputs' tokens, take the key's rate limits and hold their cost (as chat
 * admission does, with no answer tokens), call the model's deployments in order, settle what was used.
 */
export class EmbeddingsGateway {
  readonly #o: ChatGatewayOptions;
  readonly #embedders = new Map<string, Embedder>();

  constructor(options: ChatGatewayOptions) {
    this.#o = options;
  }

  async embed(ctx: CallerContext, body: unknown, signal: AbortSignal): Promise<EmbeddingsAnswer> {
    const { config, limiter, store, clock, holds } = this.#o;
    const request = this.parse(body);
    const { model } = request;
    const { account, key } = ctx;
    const now = clock();
    const notAllowed = modelRefusal(key, model.id);
    if (notAllowed) throw this.#refuse(notAllowed);
    const planStanding = this.#o.billingStanding(account, now);
    if (!planStanding.ok) throw this.#refuse(new GatewayError('payment_required', planStanding.message));
    const counts = request.inputs.map((input) =>
      'text' in input ? countTextTokens(input.text) : input.tokens.length,
    );
    counts.forEach((count, index) => {
      if (count > model.maxInputTokens)
        throw invalid(
          `input[${index}] has ${count} tokens, more than ${model.id}'s limit of ${model.maxInputTokens} per input`,
          `input[${index}]`,
        );
    });
    const promptTokens = counts.reduce((sum, count) => sum + count, 0);
    const limits = this.#o.limitsOf(account);
    const subject = limitSubjectOf(key);
    const asked = { subject, requestId: ctx.requestId, limits, tokens: promptTokens, now };
    const admission = limiter.admitNow ? limiter.admitNow(asked) : await limiter.admit(asked);
    if (!admission.allowed) {
      const reason = admission.reason ?? 'requests';
      throw this.#refuse(
        new GatewayError(
          reason === 'unavailable' ? 'service_unavailable' : 'rate_limit_exceeded',
          reason === 'tokens' && promptTokens > (limits.tokensPerMinute ?? Infinity)
            ? `this request needs ${promptTokens} tokens, more than your limit of ${limits.tokensPerMinute} tokens per minute; send fewer inputs per request`
            : `rate limit exceeded: ${REFUSALS[reason]} for this API key; retry after the Retry-After delay or upgrade your plan`,
          {
            ...(admission.retryAfterMs !== undefined ? { retryAfterMs: admission.retryAfterMs } : {}),
            rateLimits: admission,
          },
        ),
      );
    }
    const holdMicros = costMicros(asPrices(model), promptTokens, 0);
    const admitted: Admitted = { ctx, model, promptTokens, rateLimits: admission };
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
      this.#finish(admitted, 'error', 0, null, 'none', true);
      throw error;
    }
    if (!held) {
      await limiter.release(subject, ctx.requestId, promptTokens, now);
      const keyLimited = await keyLimitRefusal(store, holds, key, holdMicros, now);
      if (keyLimited)
        throw this.#refuse(new GatewayError('payment_required', keyLimited, { rateLimits: admission }));
      const standing = this.#o.billingStanding(account, now, await store.ledger.balance(account.id, now));
      throw this.#refuse(
        new GatewayError(
          'payment_required',
          standing.ok
            ? `insufficient balance: this request may cost up to $${formatUsd(holdMicros, 6)}, more than is available`
            : standing.message,
          { rateLimits: admission },
        ),
      );
    }

    let upstreamMs = 0;
    let embedded;
    let deployment;
    try {
      ({ embedded, deployment, upstreamMs } = await this.#call(request, signal, config.providers));
    } catch (error) {
      this.#finish(
        admitted,
        signal.aborted ? 'cancelled' : 'error',
        signal.aborted ? promptTokens : 0,
        null,
        'none',
      );
      throw error;
    }
    const used = embedded.promptTokens ?? promptTokens;
    const cost = this.#finish(admitted, 'ok', used, deployment.id, deployment.provider);
    const data = embedded.vectors.map((vector, index) => ({
      object: 'embedding' as const,
      index,
      embedding: request.base64 ? toBase64(vector) : vector,
    }));
    return {
      body: {
        object: 'list',
        data,
        model: model.id,
        usage: { prompt_tokens: used, total_tokens: used },
      },
      rateLimits: admission,
      costMicros: cost.cost,
      overheadMs: performance.now() - ctx.arrivedAt - upstreamMs,
    };
  }

  /** The request's model, inputs and options; a 400 (or 404 for an unknown model) naming the field at fault. */
  parse(body: unknown): EmbeddingsRequest {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new GatewayError('invalid_request', 'the request body must be a JSON object');
    const fields = body as Record<string, unknown>;
    const name = fields['model'];
    if (typeof name !== 'string' || name === '')
      throw invalid('model is required: an embedding model id', 'model');
    const model = this.#o.config.embeddingModels.get(name);
    if (!model) {
      const chat = this.#o.config.models.has(name);
      const known = [...this.#o.config.embeddingModels.keys()].join(', ');
      if (chat)
        throw invalid(
          `the model ${name} is a chat model, which makes no embeddings; use one of ${known}`,
          'model',
        );
      throw new GatewayError(
        'model_not_found',
        `the model ${JSON.stringify(name.slice(0, 100))} does not exist; embedding models are ${known} (GET /v1/models lists them)`,
        { param: 'model' },
      );
    }
    const inputs = parseInputs(fields['input']);
    const format = fields['encoding_format'] ?? 'float';
    if (format !== 'float' && format !== 'base64')
      throw invalid('encoding_format must be float or base64', 'encoding_format');
    const asked = fields['dimensions'];
    let dimensions = model.dimensions;
    if (asked !== undefined && asked !== null) {
      if (typeof asked !== 'number' || !Number.isInteger(asked) || asked < 1 || asked > model.dimensions)
        throw invalid(
          `dimensions must be a whole number from 1 to ${model.dimensions} for ${model.id}`,
          'dimensions',
        );
      dimensions = asked;
    }
    const user = fields['user'];
    if (user !== undefined && user !== null && typeof user !== 'string')
      throw invalid('user must be a string', 'user');
    return {
      model,
      inputs,
      base64: format === 'base64',
      dimensions,
      dimensionsAsked: asked !== undefined && asked !== null,
    };
  }

  /** The model's deployments in order: the first that answers; a client fault stops at once. */
  async #call(
    request: EmbeddingsRequest,
    signal: AbortSignal,
    providers: ChatGatewayOptions['config']['providers'],
  ) {
    const { model } = request;
    const tokenInput = request.inputs.some((input) => 'tokens' in input);
    let last: ProviderError | undefined;
    let tried = 0;
    for (const deployment of model.deployments) {
      const provider = providers.get(deployment.provider);
      if (!provider) continue;
      if (tokenInput && provider.type === 'gemini') continue;
      tried += 1;
      const embedder = this.#embedderOf(deployment.provider);
      const startedAt = performance.now();
      try {
        const embedded = await embedder.embed({
          inputs: request.inputs,
          upstreamModel: deployment.upstreamModel,
          dimensions: request.dimensions,
          dimensionsAsked: request.dimensionsAsked,
          signal,
        });
        if (embedded.vectors.length !== request.inputs.length)
          throw new ProviderError('protocol', 'upstream answered a different number of embeddings');
        return { embedded, deployment, upstreamMs: performance.now() - startedAt };
      } catch (error) {
        if (!(error instanceof ProviderError))
          throw new GatewayError('internal_error', 'the gateway failed while handling this request', {
            cause: error,
          });
        if (error.failure === 'aborted' || signal.aborted)
          throw new GatewayError('internal_error', 'request cancelled by the client', { cause: error });
        if (error.clientFault)
          throw new GatewayError(
            'invalid_request',
            `the model rejected the request: ${sanitizeUpstreamMessage(error.message, deployment.upstreamModel, model.id)}`,
            { cause: error },
          );
        this.#o.logger.warn({ err: error, deployment: deployment.id }, 'embeddings upstream failed');
        last = error;
      }
    }
    if (tried === 0)
      throw invalid(
        `${model.id} takes text inputs only (its upstream does not take token arrays); send the texts`,
        'input',
      );
    throw new GatewayError(
      'provider_error',
      `every upstream of ${model.id} failed${last?.status ? ` (last: upstream status ${last.status})` : ''}; retry later`,
      { cause: last },
    );
  }

  #embedderOf(providerId: string): Embedder {
    let embedder = this.#embedders.get(providerId);
    if (!embedder) {
      embedder = createEmbedder(this.#o.config.providers.get(providerId)!, this.#o.config.timeouts);
      this.#embedders.set(providerId, embedder);
    }
    return embedder;
  }

  /** Settles the request (which releases its hold) and reconciles its rate-limit tokens; returns its cost. */
  #finish(
    admitted: Admitted,
    status: UsageStatus,
    promptTokens: number,
    deployment: string | null,
    provider: string,
    giveBack = false,
  ): { cost: number } {
    const { ctx, model } = admitted;
    const { clock, settlements, limiter, metrics, logger, holds } = this.#o;
    const now = clock();
    const cost = costMicros(asPrices(model), promptTokens, 0);
    const settlement: Settlement = {
      requestId: ctx.requestId,
      accountId: ctx.account.id,
      keyId: ctx.key.id,
      model: model.id,
      deployment,
      promptTokens,
      completionTokens: 0,
      estimated: false,
      costMicros: cost,
      status,
      latencyMs: performance.now() - ctx.arrivedAt,
      ttftMs: null,
      createdAt: now,
    };
    settlements.add(settlement);
    this.#o.onFinished?.(settlement);
    void holds.finished?.(settlement);
    const subject = limitSubjectOf(ctx.key);
    (giveBack
      ? limiter.release(subject, ctx.requestId, admitted.promptTokens, now)
      : limiter.reconcile(subject, ctx.requestId, admitted.promptTokens, promptTokens, now)
    ).catch((error: unknown) => logger.warn({ err: error }, 'rate-limit reconcile failed'));
    metrics.recordRequest(
      model.id,
      provider,
      status,
      (performance.now() - ctx.arrivedAt) / 1000,
      null,
      promptTokens,
      0,
    );
    return { cost };
  }

  #refuse(error: GatewayError): GatewayError {
    this.#o.metrics.rejected.inc({ code: error.code });
    return error;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#embedders.values()].map((embedder) => embedder.close()));
  }
}

interface Admitted {
  ctx: CallerContext;
  model: EmbeddingModelConfig;
  promptTokens: number;
  rateLimits: RateLimits;
}

const REFUSALS = {
  requests: 'requests per minute',
  tokens: 'tokens per minute',
  daily: 'tokens per day',
  unavailable: 'limits (the limit service is unavailable)',
} as const;

const asPrices = (model: EmbeddingModelConfig) => ({
  inputMicrosPerMillion: model.inputMicrosPerMillion,
  outputMicrosPerMillion: 0,
});

/** `input` as OpenAI takes it: a string, strings, one token array, or token arrays. */
function parseInputs(input: unknown): EmbeddingInput[] {
  const many = (items: unknown[]): EmbeddingInput[] => {
    if (items.length === 0) throw invalid('input must not be empty', 'input');
    if (items.length > MAX_EMBEDDING_INPUTS)
      throw invalid(
        `input holds ${items.length} items, more than the limit of ${MAX_EMBEDDING_INPUTS}`,
        'input',
      );
    return items.map((item, index) => one(item, `input[${index}]`));
  };
  const one = (item: unknown, at: string): EmbeddingInput => {
    if (typeof item === 'string') {
      if (item === '') throw invalid(`${at} must not be an empty string`, at);
      return { text: item };
    }
    if (Array.isArray(item) && item.length > 0 && item.every(isTokenId)) return { tokens: item };
    throw invalid(`${at} must be a non-empty string or a non-empty array of token ids`, at);
  };
  if (typeof input === 'string') return [one(input, 'input')];
  if (Array.isArray(input)) {
    // One token array (numbers), or a list of inputs.
    if (input.length > 0 && input.every((item) => typeof item === 'number')) return [one(input, 'input')];
    return many(input);
  }
  throw invalid('input is required: a string, an array of strings, or token arrays', 'input');
}

const isTokenId = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < 2 ** 31;

/** A vector as OpenAI's base64 encoding: its float32 values, little-endian, in base64. */
function toBase64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}
