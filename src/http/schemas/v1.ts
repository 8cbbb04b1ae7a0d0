// The front doors (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`, count_tokens, the playground) are
// served before Fastify sees the request, so they declare no Fastify schema: this is what /openapi.json says of
// them. Bodies are open objects (each door passes on the fields it does not know); the fields named are the ones
// the gateway reads itself.

const open = (
  required: readonly string[],
  properties: Record<string, unknown>,
  description: string,
): Record<string, unknown> => ({
  type: 'object',
  description,
  required,
  additionalProperties: true,
  properties,
});

const message = {
  type: 'object',
  required: ['role'],
  additionalProperties: true,
  properties: {
    role: { type: 'string' },
    content: { description: 'text, or an array of content parts', type: ['string', 'array', 'null'] },
  },
} as const;

const stream = { type: 'boolean', description: 'answer as server-sent events' } as const;

const chatRequest = open(
  ['model', 'messages'],
  {
    model: { type: 'string', description: 'a model id from GET /v1/models' },
    messages: { type: 'array', items: message, minItems: 1 },
    stream,
    stream_options: {
      type: 'object',
      additionalProperties: true,
      properties: { include_usage: { type: 'boolean' } },
    },
    max_tokens: { type: 'integer', minimum: 1 },
    max_completion_tokens: { type: 'integer', minimum: 1 },
    temperature: { type: 'number' },
    top_p: { type: 'number' },
    stop: { type: ['string', 'array', 'null'] },
    tools: { type: 'array', items: { type: 'object' } },
    response_format: { type: 'object' },
  },
  "OpenAI's chat completion request",
);

const usage = {
  type: 'object',
  additionalProperties: true,
  properties: {
    prompt_tokens: { type: 'integer' },
    completion_tokens: { type: 'integer' },
    total_tokens: { type: 'integer' },
  },
} as const;

const chatCompletion = open(
  ['id', 'object', 'created', 'model', 'choices'],
  {
    id: { type: 'string' },
    object: { type: 'string', const: 'chat.completion' },
    created: { type: 'integer' },
    model: { type: 'string' },
    choices: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: true,
        properties: {
          index: { type: 'integer' },
          message,
          finish_reason: { type: ['string', 'null'] },
        },
      },
    },
    usage,
  },
  "OpenAI's chat completion object",
);

const responsesRequest = open(
  ['model', 'input'],
  {
    model: { type: 'string' },
    input: { type: ['string', 'array'], description: 'text, or an array of input items' },
    instructions: { type: ['string', 'null'] },
    stream,
    max_output_tokens: { type: 'integer', minimum: 1 },
    temperature: { type: 'number' },
    store: { type: 'boolean' },
    previous_response_id: { type: ['string', 'null'] },
  },
  "OpenAI's Responses API request",
);

const responseObject = open(
  ['id', 'object', 'model', 'output'],
  {
    id: { type: 'string' },
    object: { type: 'string', const: 'response' },
    created_at: { type: 'integer' },
    status: { type: 'string' },
    model: { type: 'string' },
    output: { type: 'array', items: { type: 'object' } },
    usage: { type: 'object', additionalProperties: true },
  },
  "OpenAI's response object",
);

const messagesRequest = open(
  ['model', 'messages', 'max_tokens'],
  {
    model: { type: 'string' },
    messages: { type: 'array', items: message, minItems: 1 },
    system: { type: ['string', 'array'] },
    max_tokens: { type: 'integer', minimum: 1 },
    stream,
    temperature: { type: 'number' },
    top_p: { type: 'number' },
    stop_sequences: { type: 'array', items: { type: 'string' } },
    tools: { type: 'array', items: { type: 'object' } },
  },
  "Anthropic's Messages API request",
);

const messageObject = open(
  ['id', 'type', 'role', 'content', 'model'],
  {
    id: { type: 'string' },
    type: { type: 'string', const: 'message' },
    role: { type: 'string', const: 'assistant' },
    content: { type: 'array', items: { type: 'object' } },
    model: { type: 'string' },
    stop_reason: { type: ['string', 'null'] },
    usage: { type: 'object', additionalProperties: true },
  },
  "Anthropic's message object",
);

const countTokensRequest = open(
  ['model', 'messages'],
  {
    model: { type: 'string' },
    messages: { type: 'array', items: message, minItems: 1 },
    system: { type: ['string', 'array'] },
    tools: { type: 'array', items: { type: 'object' } },
  },
  "Anthropic's token counting request",
);

const tokenCount = open(['input_tokens'], { input_tokens: { type: 'integer' } }, 'the prompt size in tokens');

/** An answer as JSON, or as server-sent events when the request asked to stream. */
const jsonOrEvents = (schema: Record<string, unknown>) => ({
  'application/json': { schema },
  'text/event-stream': { schema: { type: 'string', description: 'server-sent events (stream: true)' } },
});

export interface DoorDescription {
  summary: string;
  request: Record<string, unknown>;
  answer: Record<string, unknown>;
  /** Who may call: an API key (Bearer, or x-api-key at the Anthropic doors), or the dashboard's session. */
  auth: 'key' | 'session';
}

/** Each front door by its POST path. */
export const DOOR_DESCRIPTIONS: ReadonlyMap<string, DoorDescription> = new Map([
  [
    '/v1/chat/completions',
    {
      summary: 'Create a chat completion (OpenAI-compatible)',
      request: chatRequest,
      answer: jsonOrEvents(chatCompletion),
      auth: 'key',
    },
  ],
  [
    '/v1/responses',
    {
      summary: "Create a response (OpenAI's Responses API)",
      request: responsesRequest,
      answer: jsonOrEvents(responseObject),
      auth: 'key',
    },
  ],
  [
    '/v1/messages',
    {
      summary: "Create a message (Anthropic's Messages API)",
      request: messagesRequest,
      answer: jsonOrEvents(messageObject),
      auth: 'key',
    },
  ],
  [
    '/v1/messages/count_tokens',
    {
      summary: "Count a message's prompt tokens (Anthropic's Messages API)",
      request: countTokensRequest,
      answer: { 'application/json': { schema: tokenCount } },
      auth: 'key',
    },
  ],
  [
    '/api/playground/chat/completions',
    {
      summary: "The dashboard playground's chat completion (the signed-in session pays)",
      request: chatRequest,
      answer: jsonOrEvents(chatCompletion),
      auth: 'session',
    },
  ],
]);
