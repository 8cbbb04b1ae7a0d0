import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useRef, useState } from 'react';
import { api, currentCsrfToken, type List, type Model } from '../api.ts';
import { AnswerView } from '../playground/AnswerView.tsx';
import { CodeView } from '../playground/CodeView.tsx';
import { billedCost, requestBody, streamChat } from '../playground/request.ts';
import { SettingsPanel } from '../playground/SettingsPanel.tsx';
import {
  type Answer,
  EMPTY_STATE,
  messagesOf,
  type PlaygroundState,
  usePlaygroundState,
} from '../playground/state.ts';
import { ErrorMessage, Section } from '../ui.tsx';

const NEW_ANSWER: Answer = {
  text: '',
  toolCalls: '',
  usage: null,
  requestId: null,
  costUsd: null,
  error: null,
  pending: true,
};

/** Replaces pane `pane`'s answer in the last turn. */
function withAnswer(
  state: PlaygroundState,
  turn: number,
  pane: number,
  answer: Partial<Answer>,
): PlaygroundState {
  const turns = state.turns.map((t, i) => {
    if (i !== turn) return t;
    const answers = [...t.answers];
    answers[pane] = { ...(answers[pane] ?? NEW_ANSWER), ...answer };
    return { ...t, answers };
  });
  return { ...state, turns };
}

function ModelSelect(props: {
  label: string;
  value: string;
  models: Model[];
  onChange: (id: string) => void;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <select id={id} value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        {props.models.map((m) => (
          <option key={m.id} value={m.id}>
            {m.id} (USD {m.pricing.input_usd_per_million} in
            {m.pricing.cached_input_usd_per_million !== undefined
              ? `, ${m.pricing.cached_input_usd_per_million} cached`
              : ''}{' '}
            / {m.pricing.output_usd_per_million} out per M tokens)
          </option>
        ))}
      </select>
    </div>
  );
}

export function Playground() {
  const queryClient = useQueryClient();
  const models = useQuery({ queryKey: ['models'], queryFn: () => api<List<Model>>('/v1/models') });
  const [state, setState] = usePlaygroundState();
  const [draft, setDraft] = useState('');
  const [failure, setFailure] = useState<unknown>(null);
  const aborts = useRef<AbortController[]>([]);
  const messageId = useId();
  // Embedding models are listed too, but make no chat answers.
  const list = (models.data?.data ?? []).filter((m) => (m as { type?: string }).type !== 'embedding');
  const chosen = state.models.map((m, i) => m || list[i]?.id || list[0]?.id || '');
  const pending = state.turns.some((t) => t.answers.some((a) => a?.pending));

  const runPane = async (pane: number, turn: number, body: Record<string, unknown>, signal: AbortSignal) => {
    try {
      const done = await streamChat(
        body,
        currentCsrfToken(),
        (a) => setState((s) => withAnswer(s, turn, pane, a)),
        signal,
      );
      setState((s) => withAnswer(s, turn, pane, { ...done, pending: false }));
      if (done.requestId) {
        const cost = await billedCost(done.requestId);
        setState((s) => withAnswer(s, turn, pane, { costUsd: cost }));
      }
    } catch (error) {
      setState((s) =>
        withAnswer(s, turn, pane, {
          pending: false,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
    }
  };

  const send = (event: FormEvent) => {
    event.preventDefault();
    setFailure(null);
    const turn = state.turns.length;
    let bodies: Record<string, unknown>[];
    try {
      bodies = chosen.map((model, pane) =>
        requestBody(
          model,
          [...messagesOf(state.turns, pane), { role: 'user', content: draft }],
          state.settings,
        ),
      );
    } catch (error) {
      setFailure(error);
      return;
    }
    setState((s) => ({
      ...s,
      models: chosen,
      turns: [...s.turns, { user: draft, answers: chosen.map(() => NEW_ANSWER) }],
      lastRequests: bodies,
    }));
    setDraft('');
    aborts.current = bodies.map(() => new AbortController());
    void Promise.all(
      bodies.map((body, pane) => runPane(pane, turn, body, aborts.current[pane]!.signal)),
    ).then(() => queryClient.invalidateQueries({ queryKey: ['account'] }));
  };

  const clear = () => {
    for (const abort of aborts.current) abort.abort();
    setDraft('');
    setFailure(null);
    setState(EMPTY_STATE);
  };
  const comparing = chosen.length > 1;
  const setModel = (pane: number) => (id: string) =>
    setState((s) => ({ ...s, models: chosen.map((m, i) => (i === pane ? id : m)) }));

  return (
    <>
      <div className="page-head">
        <h1>Playground</h1>
        <button type="button" className="secondary" onClick={clear}>
          Clear
        </button>
      </div>
      <p>
        Try any model your plan allows, signed in, without a key. Requests are billed to your account and
        appear in usage as “Playground”. The conversation stays in this browser tab: nothing of it is stored
        on the server.
      </p>
      <div className="playground">
        <Section title="Settings">
          <div className="model-row">
            {chosen.map((model, pane) => (
              <ModelSelect
                key={pane}
                label={comparing ? `Model ${pane + 1}` : 'Model'}
                value={model}
                models={list}
                onChange={setModel(pane)}
              />
            ))}
            {list.length === 0 && <div className="field skeleton-field" aria-hidden="true" />}
          </div>
          <label className="check">
            <input
              type="checkbox"
              checked={comparing}
              onChange={(e) =>
                setState((s) => ({
                  ...s,
                  models: e.target.checked
                    ? [chosen[0] ?? '', list[1]?.id ?? list[0]?.id ?? '']
                    : [chosen[0] ?? ''],
                }))
              }
            />{' '}
            Compare two models side by side
          </label>
          <SettingsPanel
            settings={state.settings}
            onChange={(settings) => setState((s) => ({ ...s, settings }))}
          />
        </Section>
        <Section title="Conversation">
          <ol className={comparing ? 'conversation compare' : 'conversation'} aria-label="Conversation">
            {state.turns.length === 0 && <li className="empty">No messages yet. Write one below.</li>}
            {state.turns.map((turn, i) => (
              <li key={i}>
                <div className="bubble user">
                  <div className="who-said">You</div>
                  <div className="said">{turn.user}</div>
                </div>
                <div className="answers">
                  {turn.answers.map((answer, pane) => (
                    <AnswerView key={pane} answer={answer} model={state.models[pane] ?? ''} />
                  ))}
                </div>
              </li>
            ))}
          </ol>
          <form onSubmit={send} className="composer">
            <div className="field">
              <label htmlFor={messageId}>Message</label>
              <textarea
                id={messageId}
                rows={3}
                value={draft}
                onChange={(e) => setDraft(e.target.value)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) e.currentTarget.form?.requestSubmit();
                }}
                required
              />
            </div>
            <ErrorMessage error={failure ?? models.error} />
            <button type="submit" disabled={pending || !chosen[0]}>
              Send
            </button>
          </form>
        </Section>
      </div>
      <Section title="View code">
        {state.lastRequests.length === 0 ? (
          <p>Send a message to see its exact request as curl, Python and TypeScript.</p>
        ) : (
          <div className={comparing ? 'code-grid' : ''}>
            {state.lastRequests.map(
              (body, pane) =>
                body && <CodeView key={pane} body={body} title={`The request to ${String(body['model'])}`} />,
            )}
          </div>
        )}
      </Section>
    </>
  );
}
