import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, type IssuedKey, type List, type Model, num, type RecentRequest, usd } from '../api.ts';
import { ErrorMessage, Field, Section } from '../ui.tsx';

interface Result {
  text: string;
  requestId: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  costUsd: number | null;
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

export function Playground() {
  const queryClient = useQueryClient();
  const models = useQuery({ queryKey: ['models'], queryFn: () => api<List<Model>>('/v1/models') });
  const [model, setModel] = useState('');
  const [key, setKey] = useState('');
  const [message, setMessage] = useState('');
  const [result, setResult] = useState<Result | null>(null);
  const modelId = useId();
  const messageId = useId();
  const chosen = model || models.data?.data[0]?.id || '';
  const createKey = useMutation({
    mutationFn: () => api<IssuedKey>('/api/keys', { method: 'POST', body: { name: 'playground' } }),
    onSuccess: async (issued) => {
      setKey(issued.key);
      await queryClient.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  const send = useMutation({
    mutationFn: async () => {
      const response = await fetch('/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({
          model: chosen,
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: message }],
        }),
      });
      const requestId = response.headers.get('x-request-id');
      if (!response.ok || !response.body) {
        const body = (await response.json().catch(() => ({}))) as { error?: { message?: string } };
        throw new Error(body.error?.message ?? `HTTP ${response.status}`);
      }
      let current: Result = { text: '', requestId, usage: null, costUsd: null };
      setResult(current);
      for await (const chunk of chunks(response.body)) {
        if (chunk['error'])
          throw new Error((chunk['error'] as { message?: string }).message ?? 'the stream failed');
        const choices = chunk['choices'] as { delta?: { content?: string } }[] | undefined;
        const delta = choices?.[0]?.delta?.content ?? '';
        const usage = (chunk['usage'] as Result['usage'] | undefined) ?? current.usage;
        current = { ...current, text: current.text + delta, usage };
        setResult(current);
      }
      // The cost as billed: the request's own usage record (written a moment after the stream ends).
      for (let attempt = 0; attempt < 10 && requestId; attempt++) {
        const recent = await api<List<RecentRequest>>('/api/usage/recent?limit=20');
        const row = recent.data.find((r) => r.request_id === requestId);
        if (row) {
          current = { ...current, costUsd: row.cost_usd };
          setResult(current);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      await queryClient.invalidateQueries({ queryKey: ['account'] });
      await queryClient.invalidateQueries({ queryKey: ['recent'] });
    },
  });
  return (
    <>
      <h1>Playground</h1>
      <p>Requests from here are billed to your account like any other.</p>
      <Section title="Ask a model">
        <form
          onSubmit={(event) => {
            event.preventDefault();
            setResult(null);
            send.mutate();
          }}
        >
          <div className="field">
            <label htmlFor={modelId}>Model</label>
            <select id={modelId} value={chosen} onChange={(e) => setModel(e.target.value)}>
              {models.data?.data.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.id} (USD {m.pricing.input_usd_per_million}/{m.pricing.output_usd_per_million} per M
                  tokens)
                </option>
              ))}
            </select>
          </div>
          <div className="copy-row">
            <Field
              label="API key"
              type="password"
              value={key}
              onChange={setKey}
              required
              autoComplete="off"
              hint="Paste one of your keys, or create one for the playground."
            />
            <button
              type="button"
              className="secondary"
              onClick={() => createKey.mutate()}
              disabled={createKey.isPending}
            >
              Create a playground key
            </button>
          </div>
          <div className="field">
            <label htmlFor={messageId}>Message</label>
            <textarea
              id={messageId}
              rows={4}
              value={message}
              onChange={(e) => setMessage(e.target.value)}
              required
            />
          </div>
          <ErrorMessage error={send.error ?? createKey.error} />
          <button type="submit" disabled={send.isPending || !chosen}>
            Send
          </button>
        </form>
      </Section>
      <Section title="Answer">
        <div className="answer" aria-live="polite" aria-label="Answer">
          {result?.text || (send.isPending ? '…' : 'The answer streams in here.')}
        </div>
        {result?.usage && (
          <p role="status">
            Tokens: {num(result.usage.prompt_tokens)} in, {num(result.usage.completion_tokens)} out
            {result.costUsd !== null && <>; cost {usd(result.costUsd)}</>}
            {result.requestId && (
              <>
                {' '}
                (request <code>{result.requestId}</code>)
              </>
            )}
          </p>
        )}
      </Section>
    </>
  );
}
