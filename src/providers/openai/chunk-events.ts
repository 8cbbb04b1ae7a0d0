import type { ChatChunk } from '../../core/chat-types.ts';
import type { EventBatch } from '../../core/stream-event.ts';

/**
 * A chat-completion chunk as canonical events, into `out`: `start` before the stream's first chunk (`started`
 * says whether it was sent), then per choice its content, its tool-call deltas and its finish reason, then the
 * chunk's usage when it carries one.
 */
export function chunkEvents(chunk: ChatChunk, out: EventBatch, started: boolean): void {
  if (!started)
    out.push({
      type: 'start',
      id: typeof chunk.id === 'string' ? chunk.id : '',
      created: typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000),
    });
  for (const choice of chunk.choices) {
    const delta = choice?.delta;
    if (typeof delta?.content === 'string') out.push({ type: 'text', text: delta.content });
    for (const call of delta?.tool_calls ?? []) {
      const name = call.function?.name;
      const args = call.function?.arguments;
      out.push({
        type: 'tool',
        index: call.index,
        id: call.id,
        name: typeof name === 'string' ? name : undefined,
        args: typeof args === 'string' ? args : '',
      });
    }
    if (choice?.finish_reason)
      out.push(
        typeof choice.stop_reason === 'string'
          ? { type: 'finish', reason: choice.finish_reason, stopSequence: choice.stop_reason }
          : { type: 'finish', reason: choice.finish_reason },
      );
  }
  const usage = chunk.usage;
  if (typeof usage?.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number')
    out.push({ type: 'usage', usage });
}
