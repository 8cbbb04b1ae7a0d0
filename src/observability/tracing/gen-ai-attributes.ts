/**
 * Attribute names of the OpenTelemetry GenAI semantic conventions (gen-ai-spans, semantic-conventions 1.45) and
 * Tollgate's own. No attribute ever carries a prompt's or an answer's text: gen_ai.input.messages,
 * gen_ai.output.messages and gen_ai.system_instructions are never set, whatever a capture setting says.
 */
export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  maxTokens: 'gen_ai.request.max_tokens',
  temperature: 'gen_ai.request.temperature',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  responseId: 'gen_ai.response.id',
  errorType: 'error.type',
  serverAddress: 'server.address',
} as const;

export const TOLLGATE = {
  requestId: 'tollgate.request.id',
  door: 'tollgate.door',
  accountId: 'tollgate.account.id',
  keyId: 'tollgate.key.id',
  costUsd: 'tollgate.cost.usd',
  deployment: 'tollgate.deployment',
  retry: 'tollgate.retry',
  attempts: 'tollgate.attempts',
  ttftMs: 'tollgate.time_to_first_token_ms',
  admissionMs: 'tollgate.admission_ms',
  holdMs: 'tollgate.hold_ms',
  errorCode: 'tollgate.error.code',
  status: 'tollgate.status',
  estimated: 'tollgate.usage.estimated',
  upstreamStatus: 'tollgate.upstream.status',
} as const;

/** gen_ai.provider.name's well-known values by Tollgate provider type; others are reported as they are. */
export const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
};
