// The playground's conversation: in this browser tab only (sessionStorage, so it survives moving between the
// dashboard's pages), never sent anywhere but to the model; Clear and signing out remove it.
import { useEffect, useState } from 'react';
import { EMPTY_SETTINGS, type Message, type Settings, type Streamed } from './request.ts';

const STORAGE_KEY = 'tollgate.playground';

export interface Answer extends Streamed {
  costUsd: number | null;
  error: string | null;
  pending: boolean;
}

/** One user message and each compared model's answer to it (by pane). */
export interface Turn {
  user: string;
  answers: (Answer | null)[];
}

export interface PlaygroundState {
  /** One model, or two side by side. */
  models: string[];
  settings: Settings;
  turns: Turn[];
  /** The body each pane sent last: what "view code" shows. */
  lastRequests: (Record<string, unknown> | null)[];
}

export const EMPTY_STATE: PlaygroundState = {
  models: [''],
  settings: EMPTY_SETTINGS,
  turns: [],
  lastRequests: [],
};

/** Pane `pane`'s side of the conversation, as chat messages. */
export function messagesOf(turns: Turn[], pane: number): Message[] {
  return turns.flatMap((turn): Message[] => {
    const answer = turn.answers[pane];
    return answer && !answer.error && answer.text
      ? [
          { role: 'user', content: turn.user },
          { role: 'assistant', content: answer.text },
        ]
      : [{ role: 'user', content: turn.user }];
  });
}

function load(): PlaygroundState {
  try {
    const saved = sessionStorage.getItem(STORAGE_KEY);
    if (!saved) return EMPTY_STATE;
    const state = JSON.parse(saved) as PlaygroundState;
    // An answer still streaming when the page was left will not finish.
    const turns = state.turns.map((turn) => ({
      ...turn,
      answers: turn.answers.map((a) =>
        a?.pending ? { ...a, pending: false, error: a.error ?? 'stopped' } : a,
      ),
    }));
    return { ...EMPTY_STATE, ...state, turns };
  } catch {
    return EMPTY_STATE;
  }
}

/** Forgets the conversation (Clear, and signing out). */
export function forgetPlayground(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

export function usePlaygroundState() {
  const [state, setState] = useState<PlaygroundState>(load);
  useEffect(() => {
    if (state === EMPTY_STATE) forgetPlayground();
    else sessionStorage.setItem(STORAGE_KEY, JSON.stringify(state));
  }, [state]);
  return [state, setState] as const;
}
