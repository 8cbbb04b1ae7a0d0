// The playground's request: built from the conversation and the settings, exactly as it goes on the wire (the
// "view code" snippets print this same body), and streamed back chunk by chunk.
import { api, type RecentRequests } from '../api.ts';

export interface Settings {
  system: string;
  temperature: string;
  topP: string;
  maxTokens: string;
  stop: string;
  jsonSchema: string;
  tools: string;
}

export const EMPTY_SETTINGS: Settings = {
  system: '',
  temperature: '',
  topP: '',
  maxTokens: '',
  stop: '',
  jsonSchema: '',
  tools: '',
};

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

export interface Message {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A settings field that must be JSON, parsed, or an error naming the field. */
function parseJson(label: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${label} is not valid JSON`);
  }
}

/** A number field: undefined when empty, an error when not a number. */
function parseNumber(label: string, text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const value = Number(text);
  if (!Number.isFinite(value)) throw new Error(`${label} must be a number`);
  return value;
}

/** The chat-completions body for `model` over `messages` with the settings (throws on a malformed setting). */
export function requestBody(model: string, messages: Message[], settings: Settings): Record<string, unknown> {
  const body: Record<string, unknown> = { model, messages: [] as Message[] };
  const all: Message[] = settings.system.trim() ? [{ role: 'system', content: settings.system }] : [];
  body['messages'] = [...all, ...messages];
  const temperature = parseNumber('Temperature', settings.temperature);
  if (temperature !== undefined) body['temperature'] = temperature;
  const topP = parseNumber('Top P', settings.topP);
  if (topP !== undefined) body['top_p'] = topP;
  const maxTokens = parseNumber('Max tokens', settings.maxTokens);
  if (maxTokens !== undefined) body['max_tokens'] = maxTokens;
  const stops = settings.stop.split('\n').filter((line) => line !== '');
  if (stops.length) body['stop'] = stops;
  if (settings.jsonSchema.trim()) {
    const schema = parseJson('JSON schema', settings.jsonSchema);
    body['response_format'] = { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } };
  }
  if (settings.tools.trim()) body['tools'] = parseJson('Tools', settings.tools);
  body['stream'] = true;
  body['stream_options'] = { include_usage: true };
  return body;
}

/** Reads an OpenAI-style SSE stream: each `data:` line is one chunk until `data: [DONE]`. */
async function* chunks(body: ReadableStream<Uint8Array>): AsyncGenerator<Record<string, unknown>> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 1);
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      if (data === '[DONE]') return;
      yield JSON.parse(data) as Record<string, unknown>;
    }
  }
}

export interface Streamed {
  text: string;
  toolCalls: string;
  usage: Usage | null;
  requestId: string | null;
}

/**
 * Sends `body` to the session's playground route (the session cookie and its CSRF token, no key) and reports
 * the answer as it grows; resolves to the whole answer.
 */
export async function streamChat(
  body: Record<string, unknown>,
  csrfToken: string,
  onUpdate: (answer: Streamed) => void,
  signal: AbortSignal,
): Promise<Streamed> {
  const response = await fetch('/api/playground/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
    credentials: 'same-origin',
    body: JSON.stringify(body),
    signal,
  });
  let answer: Streamed = {
    text: '',
    toolCalls: '',
    usage: null,
    requestId: response.headers.get('x-request-id'),
  };
  if (!response.ok || !response.body) {
    const failure = (await response.json().catch(() => ({}))) as { error?: { message?: string } };
    throw new Error(failure.error?.message ?? `HTTP ${response.status}`);
  }
  for await (const chunk of chunks(response.body)) {
    if (chunk['error'])
      throw new Error((chunk['error'] as { message?: string }).message ?? 'the stream failed');
    const choices = chunk['choices'] as
      | {
          delta?: {
            content?: string | null;
            tool_calls?: { function?: { name?: string; arguments?: string } }[];
          };
        }[]
      | undefined;
    const delta = choices?.[0]?.delta;
    const calls = (delta?.tool_calls ?? [])
      .map((call) => `${call.function?.name ?? ''}${call.function?.arguments ?? ''}`)
      .join('');
    answer = {
      ...answer,
      text: answer.text + (delta?.content ?? ''),
      toolCalls: answer.toolCalls + calls,
      usage: (chunk['usage'] as Usage | undefined) ?? answer.usage,
    };
    onUpdate(answer);
  }
  return answer;
}

/** The request's cost as billed: its usage record, written a moment after the stream ends (null if not yet). */
export async function billedCost(requestId: string): Promise<number | null> {
  for (let attempt = 0; attempt < 15; attempt++) {
    const recent = await api<RecentRequests>('/api/usage/recent?limit=50');
    const row = recent.data.find((r) => r.request_id === requestId);
    if (row) return row.cost_usd;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return null;
}
