// The `/api` wire contract, declared once. Each answer's JSON Schema is what Fastify serializes with (a route's
// `schema.response`), what /openapi.json publishes, and, through `FromSchema`, the type the presenters return and
// the dashboard reads. This module imports nothing from the server: the web app's typecheck reads it as it is.
//
// Fastify's serializer writes only the properties a schema names and coerces values to the declared type, and it
// throws when a `required` one is missing: each schema says exactly what is sent (`additionalProperties: true`
// where the shape is open).
import type { FromSchema } from 'json-schema-to-ts';

const string = { type: 'string' } as const;
const nullableString = { type: ['string', 'null'] } as const;
const instant = { type: 'string', format: 'date-time' } as const;
const nullableInstant = { type: ['string', 'null'], format: 'date-time' } as const;
const integer = { type: 'integer' } as const;
const nullableInteger = { type: ['integer', 'null'] } as const;
/** A USD amount (display only: the ledger holds integer micro-USD). */
const usd = { type: 'number' } as const;
const nullableUsd = { type: ['number', 'null'] } as const;
const nullableStrings = { type: ['array', 'null'], items: string } as const;

/** A list answer: `{object: 'list', data: [...]}`. */
const list = <Item extends object>(item: Item) =>
  ({
    type: 'object',
    required: ['object', 'data'],
    additionalProperties: false,
    properties: { object: { type: 'string', const: 'list' }, data: { type: 'array', items: item } },
  }) as const;

/** A paged list answer: a list with its total and the page asked for. */
const page = <Item extends object>(item: Item) =>
  ({
    type: 'object',
    required: ['object', 'data', 'total', 'limit', 'offset'],
    additionalProperties: false,
    properties: {
      object: { type: 'string', const: 'list' },
      data: { type: 'array', items: item },
      total: integer,
      limit: integer,
      offset: integer,
    },
  }) as const;

/** The spec's error object: every 4xx and 5xx answer. */
export const errorSchema = {
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'code'],
      additionalProperties: true,
      properties: {
        message: string,
        type: string,
        code: string,
        param: nullableString,
        request_id: string,
      },
    },
  },
} as const;

export const accountSchema = {
  type: 'object',
  required: ['id', 'email', 'email_verified', 'status', 'plan', 'plan_expires_at', 'created_at'],
  additionalProperties: false,
  properties: {
    id: string,
    email: string,
    email_verified: { type: 'boolean' },
    status: string,
    plan: string,
    plan_expires_at: nullableInstant,
    created_at: instant,
  },
} as const;
export type Account = FromSchema<typeof accountSchema>;

const creditProperties = {
  id: string,
  kind: string,
  amount_usd: usd,
  remaining_usd: usd,
  expires_at: nullableInstant,
} as const;

const balanceProperties = {
  balance_usd: usd,
  held_usd: usd,
  available_usd: usd,
  credits: {
    type: 'array',
    items: {
      type: 'object',
      required: ['id', 'kind', 'amount_usd', 'remaining_usd', 'expires_at'],
      additionalProperties: false,
      properties: creditProperties,
    },
  },
} as const;

export const balanceSchema = {
  type: 'object',
  required: ['balance_usd', 'held_usd', 'available_usd', 'credits'],
  additionalProperties: false,
  properties: balanceProperties,
} as const;
export type Balance = FromSchema<typeof balanceSchema>;

/** `GET /api/account`. */
export const accountDetailsSchema = {
  type: 'object',
  required: [
    ...accountSchema.required,
    ...balanceSchema.required,
    'limits',
    'daily_tokens_used',
    'billing_status',
    'billing_message',
  ],
  additionalProperties: false,
  properties: {
    ...accountSchema.properties,
    limits: {
      type: 'object',
      required: ['requests_per_minute', 'tokens_per_minute', 'daily_tokens'],
      additionalProperties: false,
      properties: {
        requests_per_minute: nullableInteger,
        tokens_per_minute: nullableInteger,
        daily_tokens: nullableInteger,
      },
    },
    ...balanceProperties,
    daily_tokens_used: integer,
    billing_status: string,
    billing_message: nullableString,
  },
} as const;
export type AccountDetails = FromSchema<typeof accountDetailsSchema>;

/** A session as sign-in and `GET /api/auth/session` give it. */
export const sessionSchema = {
  type: 'object',
  required: ['account', 'operator', 'csrf_token', 'expires_at'],
  additionalProperties: false,
  properties: {
    account: accountSchema,
    /** True for an operator account: the app shows the operator console. */
    operator: { type: 'boolean' },
    csrf_token: string,
    expires_at: instant,
  },
} as const;
export type Session = FromSchema<typeof sessionSchema>;

const keyControlProperties = {
  limit_usd: nullableUsd,
  limit_period: { type: ['string', 'null'], enum: ['daily', 'weekly', 'monthly', 'never', null] },
  expires_at: nullableInstant,
  allowed_models: nullableStrings,
} as const;
const keyControlRequired = ['limit_usd', 'limit_period', 'expires_at', 'allowed_models'] as const;

export const keyControlsSchema = {
  type: 'object',
  required: keyControlRequired,
  additionalProperties: false,
  properties: keyControlProperties,
} as const;
export type KeyControlsView = FromSchema<typeof keyControlsSchema>;

const keyRequired = [
  'id',
  'name',
  'prefix',
  'status',
  'allowed_ips',
  'created_at',
  'revoked_at',
  ...keyControlRequired,
] as const;
const keyProperties = {
  id: string,
  name: string,
  prefix: string,
  status: { type: 'string', enum: ['active', 'revoked'] },
  allowed_ips: nullableStrings,
  created_at: instant,
  revoked_at: nullableInstant,
  ...keyControlProperties,
} as const;

/** An API key as its owner and operators see it (never the secret). */
export const keySchema = {
  type: 'object',
  required: keyRequired,
  additionalProperties: false,
  properties: keyProperties,
} as const;
export type KeyView = FromSchema<typeof keySchema>;

/** An API key in a listing: when it was last used and, for a limited key, its spend this period. */
export const listedKeySchema = {
  type: 'object',
  required: keyRequired,
  additionalProperties: false,
  properties: {
    ...keyProperties,
    /** When the key last made a request (null: never). */
    last_used_at: nullableInstant,
    spent_this_period_usd: nullableUsd,
    remaining_usd: nullableUsd,
    resets_at: nullableInstant,
  },
} as const;
export type ApiKey = FromSchema<typeof listedKeySchema>;

/** A key with its secret: once, at creation or rotation. */
export const issuedKeySchema = {
  type: 'object',
  required: ['id', 'name', 'prefix', 'key', 'allowed_ips', 'created_at', ...keyControlRequired],
  additionalProperties: false,
  properties: {
    id: string,
    name: string,
    prefix: string,
    key: string,
    allowed_ips: nullableStrings,
    created_at: instant,
    ...keyControlProperties,
  },
} as const;
export type IssuedKey = FromSchema<typeof issuedKeySchema>;

/** `GET /api/key`: the calling key's controls, spend and what its limit still allows. */
export const ownKeySchema = {
  type: 'object',
  required: [
    'id',
    'name',
    'prefix',
    ...keyControlRequired,
    'usage',
    'held_usd',
    'remaining_usd',
    'period_started_at',
    'resets_at',
  ],
  additionalProperties: false,
  properties: {
    id: string,
    name: string,
    prefix: string,
    ...keyControlProperties,
    usage: {
      type: 'object',
      required: ['today_usd', 'this_week_usd', 'this_month_usd', 'this_period_usd'],
      additionalProperties: false,
      properties: { today_usd: usd, this_week_usd: usd, this_month_usd: usd, this_period_usd: usd },
    },
    held_usd: usd,
    remaining_usd: nullableUsd,
    period_started_at: nullableInstant,
    resets_at: nullableInstant,
  },
} as const;
export type OwnKey = FromSchema<typeof ownKeySchema>;

/** The kinds of a usage row's tokens: of the prompt, cache reads and writes; of the completion, reasoning. */
const tokenKindProperties = {
  input_tokens: { type: 'integer', description: 'prompt tokens neither read from nor written to a cache' },
  cached_input_tokens: { type: 'integer', description: "prompt tokens read from the upstream's cache" },
  cache_write_tokens: { type: 'integer', description: "prompt tokens written to the upstream's cache" },
  cache_write_1h_tokens: { type: 'integer', description: 'of the cache writes, those kept for an hour' },
  reasoning_tokens: { type: 'integer', description: 'of the completion tokens, hidden reasoning' },
} as const;
export type TokenKinds = FromSchema<{ type: 'object'; properties: typeof tokenKindProperties }>;

const usageTotalsProperties = {
  requests: integer,
  prompt_tokens: integer,
  completion_tokens: integer,
  total_tokens: integer,
  ...tokenKindProperties,
  cost_usd: usd,
} as const;
const usageTotalsRequired = [
  'requests',
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'cost_usd',
] as const;

export const usageTotalsSchema = {
  type: 'object',
  required: usageTotalsRequired,
  additionalProperties: false,
  properties: usageTotalsProperties,
} as const;

/** `GET /api/usage`: one row per group (its field named after the grouping) and the total. */
export const usageSchema = {
  type: 'object',
  required: ['object', 'from', 'to', 'group_by', 'data', 'total'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'list' },
    from: string,
    to: string,
    group_by: { type: 'string', enum: ['day', 'model', 'key'] },
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: usageTotalsRequired,
        additionalProperties: false,
        properties: { day: string, model: string, key_id: string, ...usageTotalsProperties },
      },
    },
    total: usageTotalsSchema,
  },
} as const;
export type Usage = FromSchema<typeof usageSchema>;
export type UsageRow = Usage['data'][number];

export const recentRequestSchema = {
  type: 'object',
  required: [
    'request_id',
    'key_id',
    'model',
    'prompt_tokens',
    'completion_tokens',
    'total_tokens',
    'cost_usd',
    'status',
    'latency_ms',
    'created_at',
  ],
  additionalProperties: false,
  properties: {
    request_id: string,
    key_id: string,
    model: string,
    prompt_tokens: integer,
    completion_tokens: integer,
    total_tokens: integer,
    ...tokenKindProperties,
    cost_usd: usd,
    status: string,
    latency_ms: { type: 'number' },
    created_at: instant,
  },
} as const;
export type RecentRequest = FromSchema<typeof recentRequestSchema>;
export const recentRequestsSchema = list(recentRequestSchema);
export type RecentRequests = FromSchema<typeof recentRequestsSchema>;

/** `GET /api/usage/daily-by-model`: the last 30 UTC days, for the overview's chart. */
export const dailyByModelSchema = {
  type: 'object',
  required: ['object', 'from', 'to', 'data'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'list' },
    from: string,
    to: string,
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['day', 'model', 'requests', 'total_tokens', 'cost_usd'],
        additionalProperties: false,
        properties: { day: string, model: string, requests: integer, total_tokens: integer, cost_usd: usd },
      },
    },
  },
} as const;
export type DailyByModel = FromSchema<typeof dailyByModelSchema>;

/** `GET /api/stats/segmented`. */
export const segmentedStatsSchema = {
  type: 'object',
  required: [
    'total_users',
    'verified_users',
    'active_users_7d',
    'active_users_30d',
    'paid_users',
    'today_tokens',
    'today_cost',
  ],
  additionalProperties: false,
  properties: {
    total_users: integer,
    verified_users: integer,
    active_users_7d: integer,
    active_users_30d: integer,
    paid_users: integer,
    today_tokens: integer,
    today_cost: usd,
  },
} as const;
export type SegmentedStats = FromSchema<typeof segmentedStatsSchema>;

export const planSchema = {
  type: 'object',
  required: [
    'id',
    'name',
    'requests_per_minute',
    'tokens_per_minute',
    'daily_tokens',
    'monthly_price_usd',
    'monthly_allowance_usd',
    'included_quota_usd',
    'overage_price_multiplier',
    'overage_cap_usd',
    'purchasable',
  ],
  additionalProperties: false,
  properties: {
    id: string,
    name: string,
    requests_per_minute: nullableInteger,
    tokens_per_minute: nullableInteger,
    daily_tokens: nullableInteger,
    monthly_price_usd: usd,
    monthly_allowance_usd: usd,
    /** The usage a period's price includes; beyond it a paid plan accrues overage. */
    included_quota_usd: usd,
    /** Overage is the model's list price times this. */
    overage_price_multiplier: { type: 'number' },
    /** The overage an account may accrue in a period unless it sets its own cap (null: no cap). */
    overage_cap_usd: { type: ['number', 'null'] },
    purchasable: { type: 'boolean' },
  },
} as const;
export type Plan = FromSchema<typeof planSchema>;
export const plansSchema = list(planSchema);

/** A model as `GET /v1/models` lists it (OpenAI's model object, with Tollgate's details). */
export const modelSchema = {
  type: 'object',
  required: [
    'id',
    'object',
    'created',
    'owned_by',
    'description',
    'context_window',
    'max_output_tokens',
    'pricing',
  ],
  additionalProperties: false,
  properties: {
    id: string,
    object: { type: 'string', const: 'model' },
    created: integer,
    owned_by: string,
    description: string,
    context_window: integer,
    max_output_tokens: integer,
    pricing: {
      type: 'object',
      required: ['input_usd_per_million', 'output_usd_per_million'],
      additionalProperties: false,
      properties: {
        input_usd_per_million: usd,
        output_usd_per_million: usd,
        cached_input_usd_per_million: usd,
        cache_write_usd_per_million: usd,
        cache_write_1h_usd_per_million: usd,
      },
    },
  },
} as const;
export type Model = FromSchema<typeof modelSchema>;

/** An embedding model as `GET /v1/models` lists it: a chat model's fields where they apply, and its dimensions. */
export const embeddingModelSchema = {
  type: 'object',
  required: [
    'id',
    'object',
    'created',
    'owned_by',
    'type',
    'description',
    'dimensions',
    'max_input_tokens',
    'pricing',
  ],
  additionalProperties: false,
  properties: {
    id: string,
    object: { type: 'string', const: 'model' },
    created: integer,
    owned_by: string,
    type: { type: 'string', const: 'embedding' },
    description: string,
    dimensions: integer,
    max_input_tokens: integer,
    pricing: {
      type: 'object',
      required: ['input_usd_per_million'],
      additionalProperties: false,
      properties: { input_usd_per_million: usd },
    },
  },
} as const;
export type EmbeddingModel = FromSchema<typeof embeddingModelSchema>;
/** Every model of the catalog: chat models, then embedding models. */
export const catalogModelSchema = { anyOf: [modelSchema, embeddingModelSchema] } as const;
export type CatalogModel = FromSchema<typeof catalogModelSchema>;
export const modelsSchema = list(catalogModelSchema);

/** `POST /v1/embeddings`: OpenAI's list of embeddings (floats, or base64 of little-endian float32s). */
export const embeddingsAnswerSchema = {
  type: 'object',
  required: ['object', 'data', 'model', 'usage'],
  additionalProperties: true,
  properties: {
    object: { type: 'string', const: 'list' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['object', 'index', 'embedding'],
        additionalProperties: true,
        properties: {
          object: { type: 'string', const: 'embedding' },
          index: integer,
          embedding: { type: ['array', 'string'], items: { type: 'number' } },
        },
      },
    },
    model: string,
    usage: {
      type: 'object',
      required: ['prompt_tokens', 'total_tokens'],
      additionalProperties: true,
      properties: { prompt_tokens: integer, total_tokens: integer },
    },
  },
} as const;

/** A chat model as Anthropic's Models API lists it (the request carries `anthropic-version`). */
export const anthropicModelSchema = {
  type: 'object',
  required: ['type', 'id', 'display_name', 'created_at', 'max_input_tokens', 'max_tokens'],
  additionalProperties: true,
  properties: {
    type: { type: 'string', const: 'model' },
    id: string,
    display_name: string,
    created_at: string,
    max_input_tokens: integer,
    max_tokens: integer,
  },
} as const;
/** Anthropic's page of models: its data, first and last ids, and whether more follow. */
export const anthropicModelsSchema = {
  type: 'object',
  required: ['data', 'first_id', 'last_id', 'has_more'],
  additionalProperties: false,
  properties: {
    data: { type: 'array', items: anthropicModelSchema },
    first_id: nullableString,
    last_id: nullableString,
    has_more: { type: 'boolean' },
  },
} as const;
/** `GET /v1/models`: OpenAI's list, or Anthropic's page when the request carries `anthropic-version`. */
export const modelListSchema = { anyOf: [modelsSchema, anthropicModelsSchema] } as const;
/** `GET /v1/models/{id}`: one model, in OpenAI's shape or Anthropic's. */
export const oneModelSchema = { anyOf: [catalogModelSchema, anthropicModelSchema] } as const;

const orderProperties = {
  order_id: string,
  kind: string,
  plan: nullableString,
  status: string,
  reason: nullableString,
  amount: usd,
  currency: string,
  provider: string,
  created_at: instant,
  completed_at: nullableInstant,
} as const;
const orderRequired = [
  'order_id',
  'kind',
  'plan',
  'status',
  'reason',
  'amount',
  'currency',
  'provider',
  'created_at',
  'completed_at',
] as const;

export const orderSchema = {
  type: 'object',
  required: orderRequired,
  additionalProperties: false,
  properties: orderProperties,
} as const;
export type Order = FromSchema<typeof orderSchema>;
export const ordersSchema = list(orderSchema);

/** A new order and where its payment is made. */
export const checkoutSchema = {
  type: 'object',
  required: [...orderRequired, 'checkout_url'],
  additionalProperties: false,
  properties: { ...orderProperties, checkout_url: string },
} as const;
export type Checkout = FromSchema<typeof checkoutSchema>;

export const stripeReceiptSchema = {
  type: 'object',
  required: ['received', 'result'],
  additionalProperties: false,
  properties: {
    received: { type: 'boolean', const: true },
    result: { type: 'string', enum: ['applied', 'duplicate', 'ignored', 'refused'] },
  },
} as const;

export const webhookEndpointSchema = {
  type: 'object',
  required: ['url', 'secret'],
  additionalProperties: false,
  properties: { url: string, secret: string, created_at: instant },
} as const;
export type WebhookEndpoint = FromSchema<typeof webhookEndpointSchema>;

/** One webhook delivery attempt, as the account's and the operators' pages list it. */
export const deliverySchema = {
  type: 'object',
  required: ['id', 'event_id', 'attempt', 'url', 'status_code', 'error', 'latency_ms', 'created_at'],
  additionalProperties: false,
  properties: {
    id: string,
    event_id: string,
    attempt: integer,
    url: string,
    status_code: nullableInteger,
    error: nullableString,
    latency_ms: { type: ['number', 'null'] },
    created_at: instant,
  },
} as const;
export type Delivery = FromSchema<typeof deliverySchema>;
export const deliveriesSchema = list(deliverySchema);

export const webhookEventSchema = {
  type: 'object',
  required: [
    'id',
    'event_type',
    'status',
    'attempts',
    'last_status_code',
    'next_attempt_at',
    'created_at',
    'finished_at',
  ],
  additionalProperties: false,
  properties: {
    id: string,
    event_type: string,
    status: string,
    attempts: integer,
    last_status_code: nullableInteger,
    next_attempt_at: nullableInstant,
    created_at: instant,
    finished_at: nullableInstant,
  },
} as const;
export type WebhookEvent = FromSchema<typeof webhookEventSchema>;
export const webhookEventsSchema = list(webhookEventSchema);

/** An event put in the delivery queue. */
export const queuedEventSchema = {
  type: 'object',
  required: ['event_id', 'status'],
  additionalProperties: false,
  properties: { event_id: string, status: { type: 'string', const: 'queued' } },
} as const;

/** A confirmation whose only content is fixed flags, e.g. `{"deleted": true}`. */
export const flagsSchema = <Names extends readonly string[]>(...names: Names) =>
  ({
    type: 'object',
    required: names,
    additionalProperties: false,
    properties: Object.fromEntries(names.map((name) => [name, { type: 'boolean', const: true }])) as {
      [Name in Names[number]]: { readonly type: 'boolean'; readonly const: true };
    },
  }) as const;

/** An accepted request whose outcome is told elsewhere (mail), with a fixed message. */
export const acceptedSchema = {
  type: 'object',
  required: ['status'],
  additionalProperties: false,
  properties: { status: string, message: string },
} as const;
export type Accepted = FromSchema<typeof acceptedSchema>;

export const registeredSchema = {
  type: 'object',
  required: ['account', 'api_key'],
  additionalProperties: false,
  properties: { account: accountSchema, api_key: issuedKeySchema },
} as const;

export const verifiedSchema = {
  type: 'object',
  required: ['account', 'verified'],
  additionalProperties: false,
  properties: { account: accountSchema, verified: { type: 'boolean', const: true } },
} as const;

export const signedOutEverywhereSchema = {
  type: 'object',
  required: ['signed_out', 'sessions_ended'],
  additionalProperties: false,
  properties: { signed_out: { type: 'boolean', const: true }, sessions_ended: integer },
} as const;

// Operators.

/** An account as operators see it; `balance_usd` (credit minus debt) where the route read it. */
export const adminAccountSchema = {
  type: 'object',
  required: [
    ...accountSchema.required,
    'role',
    'limits_override',
    'credit_limit_usd',
    'last_active_at',
    'suspended_reason',
  ],
  additionalProperties: false,
  properties: {
    ...accountSchema.properties,
    balance_usd: usd,
    role: { type: 'string', enum: ['user', 'operator'] },
    limits_override: {
      type: 'object',
      required: ['rpm', 'tpm', 'daily_tokens'],
      additionalProperties: false,
      properties: { rpm: nullableInteger, tpm: nullableInteger, daily_tokens: nullableInteger },
    },
    credit_limit_usd: usd,
    last_active_at: nullableInstant,
    suspended_reason: nullableString,
  },
} as const;
export type AdminAccount = FromSchema<typeof adminAccountSchema>;
export const adminAccountsSchema = list(adminAccountSchema);
export const adminAccountPageSchema = page(adminAccountSchema);
export type AdminAccountPage = FromSchema<typeof adminAccountPageSchema>;

export const grantSchema = {
  type: 'object',
  required: ['id', 'kind', 'amount_usd', 'remaining_usd', 'expires_at', 'created_at', 'source'],
  additionalProperties: false,
  properties: { ...creditProperties, created_at: instant, source: nullableString },
} as const;
export type Grant = FromSchema<typeof grantSchema>;

/** A credit an operator granted. */
export const grantedSchema = {
  type: 'object',
  required: ['id', 'account_id', 'kind', 'amount_usd', 'expires_at'],
  additionalProperties: false,
  properties: { id: string, account_id: string, kind: string, amount_usd: usd, expires_at: nullableInstant },
} as const;
export type Granted = FromSchema<typeof grantedSchema>;

export const keysSchema = list(keySchema);
export const listedKeysSchema = list(listedKeySchema);
export type ListedKeys = FromSchema<typeof listedKeysSchema>;

/** `GET /api/admin/accounts/:id/detail`: an account's whole page. */
export const accountDetailSchema = {
  type: 'object',
  required: ['account', 'credits', 'keys', 'usage', 'orders', 'webhook_deliveries'],
  additionalProperties: false,
  properties: {
    account: adminAccountSchema,
    credits: { type: 'array', items: grantSchema },
    keys: { type: 'array', items: listedKeySchema },
    usage: {
      type: 'object',
      required: ['last_30_days'],
      additionalProperties: false,
      properties: {
        last_30_days: {
          type: 'array',
          items: {
            type: 'object',
            required: ['day', 'requests', 'tokens', 'cost_usd'],
            additionalProperties: false,
            properties: { day: string, requests: integer, tokens: integer, cost_usd: usd },
          },
        },
      },
    },
    orders: { type: 'array', items: orderSchema },
    webhook_deliveries: { type: 'array', items: deliverySchema },
  },
} as const;
export type AccountDetail = FromSchema<typeof accountDetailSchema>;

export const auditEntrySchema = {
  type: 'object',
  required: ['id', 'at', 'actor', 'action', 'account_id', 'details', 'ip'],
  additionalProperties: false,
  properties: {
    id: string,
    at: instant,
    actor: string,
    action: string,
    account_id: nullableString,
    details: {},
    ip: nullableString,
  },
} as const;
export type AuditEntry = FromSchema<typeof auditEntrySchema>;
export const auditPageSchema = page(auditEntrySchema);
export type AuditPage = FromSchema<typeof auditPageSchema>;

/** `GET /api/admin/stats/daily`. */
export const dailyStatsSchema = {
  type: 'object',
  required: ['object', 'data', 'by_plan', 'by_model'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'list' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['day', 'requests', 'tokens', 'spend_usd', 'revenue_usd', 'new_accounts'],
        additionalProperties: false,
        properties: {
          day: string,
          requests: integer,
          tokens: integer,
          spend_usd: usd,
          revenue_usd: usd,
          new_accounts: integer,
        },
      },
    },
    by_plan: {
      type: 'array',
      items: {
        type: 'object',
        required: ['plan', 'day', 'requests', 'spend_usd'],
        additionalProperties: false,
        properties: { plan: string, day: string, requests: integer, spend_usd: usd },
      },
    },
    by_model: {
      type: 'array',
      items: {
        type: 'object',
        required: ['model', 'day', 'requests', 'tokens', 'spend_usd'],
        additionalProperties: false,
        properties: { model: string, day: string, requests: integer, tokens: integer, spend_usd: usd },
      },
    },
  },
} as const;
export type DailyStats = FromSchema<typeof dailyStatsSchema>;

export const deploymentHealthSchema = {
  type: 'object',
  required: [
    'model',
    'deployment',
    'provider',
    'upstream_model',
    'circuit',
    'requests_5m',
    'error_rate_5m',
    'latency_p50_ms',
    'ttft_p50_ms',
  ],
  additionalProperties: false,
  properties: {
    model: string,
    deployment: string,
    provider: string,
    upstream_model: string,
    circuit: { type: 'string', enum: ['closed', 'open', 'half_open'] },
    requests_5m: integer,
    error_rate_5m: { type: ['number', 'null'] },
    latency_p50_ms: { type: ['number', 'null'] },
    ttft_p50_ms: { type: ['number', 'null'] },
  },
} as const;
export type DeploymentHealth = FromSchema<typeof deploymentHealthSchema>;
export const deploymentsSchema = list(deploymentHealthSchema);
export type Deployments = FromSchema<typeof deploymentsSchema>;

export const webhookHealthSchema = {
  type: 'object',
  required: ['backlog', 'failing_endpoints'],
  additionalProperties: false,
  properties: {
    backlog: {
      type: 'object',
      required: ['pending', 'failing', 'oldest_pending_at'],
      additionalProperties: false,
      properties: { pending: integer, failing: integer, oldest_pending_at: nullableInstant },
    },
    failing_endpoints: {
      type: 'array',
      items: {
        type: 'object',
        required: ['account_id', 'email', 'url', 'consecutive_failures', 'last_error', 'last_attempt_at'],
        additionalProperties: false,
        properties: {
          account_id: string,
          email: string,
          url: string,
          consecutive_failures: integer,
          last_error: nullableString,
          last_attempt_at: nullableInstant,
          last_delivery_id: nullableString,
        },
      },
    },
  },
} as const;
export type WebhookHealth = FromSchema<typeof webhookHealthSchema>;

export const announcementSchema = {
  type: 'object',
  required: [
    'id',
    'title',
    'body',
    'severity',
    'models',
    'starts_at',
    'ends_at',
    'breaking',
    'effective_at',
    'created_at',
    'updated_at',
    'created_by',
  ],
  additionalProperties: false,
  properties: {
    id: string,
    title: string,
    body: string,
    severity: { type: 'string', enum: ['info', 'minor', 'major', 'critical'] },
    models: { type: 'array', items: string },
    starts_at: instant,
    ends_at: nullableInstant,
    breaking: { type: 'boolean' },
    effective_at: nullableInstant,
    created_at: instant,
    updated_at: instant,
    created_by: string,
  },
} as const;
export type Announcement = FromSchema<typeof announcementSchema>;
export const announcementsSchema = list(announcementSchema);

// Public.

/** `/status.json`: the status snapshot (docs/operations.md). */
export const statusSchema = {
  type: 'object',
  required: ['updated_at', 'models', 'incidents', 'announcements', 'breaking_changes'],
  additionalProperties: false,
  properties: {
    updated_at: instant,
    models: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'state', 'availability_90d', 'uptime_90d'],
        additionalProperties: false,
        properties: {
          id: string,
          state: string,
          /** Oldest first, one per UTC day; null on a day with no sample. */
          availability_90d: {
            type: 'array',
            items: {
              type: 'object',
              required: ['day', 'availability'],
              additionalProperties: false,
              properties: { day: string, availability: { type: ['number', 'null'] } },
            },
          },
          uptime_90d: { type: ['number', 'null'] },
        },
      },
    },
    incidents: { type: 'array', items: announcementSchema },
    announcements: { type: 'array', items: announcementSchema },
    breaking_changes: { type: 'array', items: announcementSchema },
  },
} as const;
export type StatusDocument = FromSchema<typeof statusSchema>;

/** `GET /health`: the status for anyone; the admin key also gets the parts (open: each part reports its own). */
export const healthSchema = {
  type: 'object',
  required: ['status'],
  additionalProperties: true,
  properties: { status: { type: 'string', enum: ['ok', 'degraded', 'down'] } },
} as const;

export const readySchema = {
  type: 'object',
  required: ['status'],
  additionalProperties: false,
  properties: { status: { type: 'string', const: 'ready' } },
} as const;

/** The account's subscription to a paid plan, dates in the account's billing time. */
export const subscriptionSchema = {
  type: 'object',
  required: [
    'plan',
    'status',
    'provider',
    'current_period_start',
    'current_period_end',
    'cancel_at_period_end',
    'next_plan',
    'next_renewal_at',
    'next_attempt_at',
    'failed_attempts',
    'grace_until',
    'test_card_declines',
    'overage_price_multiplier',
    'overage_cap_usd',
    'overage_cap_is_default',
    'overage_accrued_list_usd',
    'overage_accrued_usd',
    'overage_owed_list_usd',
  ],
  additionalProperties: false,
  properties: {
    plan: string,
    status: { type: 'string', enum: ['active', 'past_due', 'canceled', 'expired'] },
    provider: string,
    current_period_start: instant,
    current_period_end: instant,
    cancel_at_period_end: { type: 'boolean' },
    /** A downgrade that takes effect at the period end. */
    next_plan: nullableString,
    next_renewal_at: nullableInstant,
    next_attempt_at: nullableInstant,
    failed_attempts: integer,
    grace_until: nullableInstant,
    /** Test provider only: the saved test card declines. */
    test_card_declines: { type: 'boolean' },
    overage_price_multiplier: { type: 'number' },
    /** Null: no cap. */
    overage_cap_usd: nullableUsd,
    overage_cap_is_default: { type: 'boolean' },
    overage_accrued_list_usd: usd,
    overage_accrued_usd: usd,
    overage_owed_list_usd: usd,
  },
} as const;
export type Subscription = FromSchema<typeof subscriptionSchema>;

/** `GET /api/billing/subscription` and every change to it: the subscription, null on a plan without one. */
export const subscriptionAnswerSchema = {
  type: 'object',
  required: ['object', 'subscription'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'subscription' },
    subscription: { anyOf: [subscriptionSchema, { type: 'null' }] },
  },
} as const;
export type SubscriptionAnswer = FromSchema<typeof subscriptionAnswerSchema>;

/** `POST /api/admin/billing/advance`: the account's billing clock moved on, and its subscription then. */
export const billingClockSchema = {
  type: 'object',
  required: ['account_id', 'billing_time', 'subscription'],
  additionalProperties: false,
  properties: {
    account_id: string,
    billing_time: instant,
    subscription: { anyOf: [subscriptionSchema, { type: 'null' }] },
  },
} as const;
export type BillingClock = FromSchema<typeof billingClockSchema>;

/** `GET|PUT /api/billing/alerts`. */
export const billingAlertsSchema = {
  type: 'object',
  required: ['low_balance_usd', 'webhook_events'],
  additionalProperties: false,
  properties: {
    /** Null: no low-balance alert. */
    low_balance_usd: nullableUsd,
    webhook_events: { type: 'array', items: string },
  },
} as const;
export type BillingAlerts = FromSchema<typeof billingAlertsSchema>;

/** `GET|PUT /api/billing/details`: who the invoices are made out to. */
export const billingDetailsSchema = {
  type: 'object',
  required: ['name', 'address', 'tax_id'],
  additionalProperties: false,
  properties: { name: nullableString, address: nullableString, tax_id: nullableString },
} as const;
export type BillingDetails = FromSchema<typeof billingDetailsSchema>;

const partySchema = {
  type: 'object',
  required: ['name', 'email', 'address', 'tax_id'],
  additionalProperties: false,
  properties: {
    name: nullableString,
    email: nullableString,
    address: nullableString,
    tax_id: nullableString,
  },
} as const;

/** One invoice (`GET /api/invoices/{id}`, and each item of the list). */
export const invoiceSchema = {
  type: 'object',
  required: [
    'id',
    'object',
    'number',
    'order_id',
    'issued_at',
    'currency',
    'total_usd',
    'lines',
    'seller',
    'buyer',
  ],
  additionalProperties: false,
  properties: {
    id: string,
    object: { type: 'string', const: 'invoice' },
    number: string,
    order_id: nullableString,
    issued_at: instant,
    currency: string,
    total_usd: usd,
    lines: {
      type: 'array',
      items: {
        type: 'object',
        required: ['description', 'amount_usd'],
        additionalProperties: false,
        properties: { description: string, amount_usd: usd },
      },
    },
    seller: partySchema,
    buyer: partySchema,
  },
} as const;
export type Invoice = FromSchema<typeof invoiceSchema>;
export const invoicesSchema = list(invoiceSchema);

/** A member's role in an organization (accounts/roles.ts says what each may do). */
export const memberRoles = ['owner', 'admin', 'billing', 'developer', 'viewer'] as const;
const memberRole = { type: 'string', enum: memberRoles } as const;

export const organizationSchema = {
  type: 'object',
  required: ['object', 'id', 'name', 'plan', 'role', 'member_id', 'created_at'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'organization' },
    id: string,
    name: string,
    plan: string,
    /** The role of the person asking. */
    role: memberRole,
    /** The person's membership. */
    member_id: string,
    created_at: instant,
  },
} as const;
export type Organization = FromSchema<typeof organizationSchema>;
export const organizationsSchema = list(organizationSchema);

export const memberSchema = {
  type: 'object',
  required: ['object', 'id', 'email', 'role', 'limit_usd', 'limit_period', 'allowed_models', 'created_at'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'organization.member' },
    id: string,
    email: string,
    role: memberRole,
    limit_usd: nullableUsd,
    limit_period: nullableString,
    allowed_models: nullableStrings,
    created_at: instant,
  },
} as const;
export type Member = FromSchema<typeof memberSchema>;
export const membersSchema = list(memberSchema);

export const invitationSchema = {
  type: 'object',
  required: ['object', 'id', 'email', 'role', 'created_at', 'expires_at', 'status'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'organization.invitation' },
    id: string,
    email: string,
    role: memberRole,
    created_at: instant,
    expires_at: instant,
    status: { type: 'string', enum: ['open', 'accepted', 'expired', 'revoked'] },
    /** The single-use secret, only in the answer that creates the invitation. */
    token: string,
  },
} as const;
export type Invitation = FromSchema<typeof invitationSchema>;
export const invitationsSchema = list(invitationSchema);

/** `GET /api/admin/organizations/{id}/members`: the members and the invitations. */
export const adminMembersSchema = {
  type: 'object',
  required: ['object', 'data', 'invitations'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'list' },
    data: { type: 'array', items: memberSchema },
    invitations: { type: 'array', items: invitationSchema },
  },
} as const;

/** `POST /api/invitations/accept`. */
export const invitationAcceptedSchema = {
  type: 'object',
  required: ['object', 'organization_id', 'member'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', const: 'organization.invitation.accepted' },
    organization_id: string,
    member: memberSchema,
  },
} as const;
export type InvitationAccepted = FromSchema<typeof invitationAcceptedSchema>;

/** An answer with no body (204). */
export const noContentSchema = { type: 'null', description: 'No content' } as const;
