import { num, usd } from '../format.ts';
import type { Answer } from './state.ts';

/** Tokens by kind and the billed cost of one answer. */
function Meter({ answer, model }: { answer: Answer; model: string }) {
  const usage = answer.usage;
  if (!usage) return <p className="meter">{answer.pending ? 'Streaming…' : ' '}</p>;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  return (
    <p className="meter" role="status" aria-label={`Tokens and cost of ${model}`}>
      Tokens: {num(usage.prompt_tokens)} in{cached ? ` (${num(cached)} cached)` : ''},{' '}
      {num(usage.completion_tokens)} out{reasoning ? ` (${num(reasoning)} reasoning)` : ''}; cost{' '}
      {answer.costUsd === null ? 'being billed…' : usd(answer.costUsd)}
    </p>
  );
}

/** One model's answer in the conversation. */
export function AnswerView({ answer, model }: { answer: Answer | null; model: string }) {
  if (!answer) return null;
  return (
    <div className="bubble assistant" aria-label={`Answer of ${model}`} aria-busy={answer.pending}>
      <div className="who-said">{model}</div>
      {answer.text && <div className="said">{answer.text}</div>}
      {answer.toolCalls && (
        <pre className="said">
          <code>tool call: {answer.toolCalls}</code>
        </pre>
      )}
      {!answer.text && !answer.toolCalls && answer.pending && <div className="said">…</div>}
      {answer.error && (
        <p className="error" role="alert">
          {answer.error}
        </p>
      )}
      <Meter answer={answer} model={model} />
    </div>
  );
}
