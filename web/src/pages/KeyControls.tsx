import { useId } from 'react';
import type { ApiKey } from '../api.ts';
import { usd } from '../format.ts';
import { Field } from '../ui.tsx';

/** A key's controls as the forms edit them: text, as typed. */
export interface ControlsDraft {
  limit: string;
  period: string;
  /** `YYYY-MM-DDTHH:MM`, read as UTC. */
  expires: string;
  /** Comma-separated model ids. */
  models: string;
}

export const EMPTY_CONTROLS: ControlsDraft = { limit: '', period: 'monthly', expires: '', models: '' };

const PERIODS = [
  ['daily', 'every day (UTC)'],
  ['weekly', 'every week (Monday, UTC)'],
  ['monthly', 'every month (UTC)'],
  ['never', 'never'],
] as const;

const PER: Record<string, string> = {
  daily: 'per day',
  weekly: 'per week',
  monthly: 'per month',
  never: 'in total',
};

/** The form's draft of a key's current controls. */
export function draftOf(key: ApiKey): ControlsDraft {
  return {
    limit: key.limit_usd === null ? '' : String(key.limit_usd),
    period: key.limit_period ?? 'monthly',
    expires: key.expires_at ? key.expires_at.slice(0, 16) : '',
    models: key.allowed_models?.join(', ') ?? '',
  };
}

/**
 * The request body for a draft: on create, empty fields are left out; on a change, an empty field removes
 * its rule (null).
 */
export function controlsBody(draft: ControlsDraft, change: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const limit = draft.limit.trim();
  if (limit) {
    body['limit_usd'] = Number(limit);
    body['limit_period'] = draft.period;
  } else if (change) body['limit_usd'] = null;
  const expires = draft.expires.trim();
  if (expires) body['expires_at'] = `${expires.length === 16 ? `${expires}:00` : expires}Z`;
  else if (change) body['expires_at'] = null;
  const models = draft.models
    .split(/[\s,]+/)
    .map((model) => model.trim())
    .filter(Boolean);
  if (models.length > 0) body['allowed_models'] = models;
  else if (change) body['allowed_models'] = null;
  return body;
}

/** The limit as one line: "USD 5.00 per day, USD 4.98 left (resets …)", or "none". */
export function describeLimit(key: ApiKey): string {
  if (key.limit_usd === null) return 'none';
  const per = PER[key.limit_period ?? 'never'] ?? '';
  const left =
    key.remaining_usd === null || key.remaining_usd === undefined ? '' : `, ${usd(key.remaining_usd)} left`;
  return `${usd(key.limit_usd)} ${per}${left}`;
}

/** The fields of a key's controls: spending limit and its period, expiry (UTC), allowed models. */
export function ControlsFields(props: {
  draft: ControlsDraft;
  onChange: (draft: ControlsDraft) => void;
  /** Distinguishes the labels of the create form and of a key's edit form. */
  suffix?: string;
}) {
  const periodId = useId();
  const { draft, onChange } = props;
  const suffix = props.suffix ? ` ${props.suffix}` : '';
  return (
    <>
      <Field
        label={`Spending limit in USD${suffix}`}
        type="number"
        min={0}
        step="0.01"
        value={draft.limit}
        onChange={(limit) => onChange({ ...draft, limit })}
        hint="Empty: no limit of its own (the account's balance still applies)."
      />
      <div className="field">
        <label htmlFor={periodId}>{`Limit resets${suffix}`}</label>
        <select
          id={periodId}
          value={draft.period}
          onChange={(event) => onChange({ ...draft, period: event.target.value })}
        >
          {PERIODS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <Field
        label={`Expires (UTC)${suffix}`}
        type="datetime-local"
        value={draft.expires}
        onChange={(expires) => onChange({ ...draft, expires })}
        hint="Empty: never expires."
      />
      <Field
        label={`Allowed models${suffix}`}
        value={draft.models}
        onChange={(models) => onChange({ ...draft, models })}
        placeholder="model-a, model-b"
        hint="Comma-separated model ids; empty allows every model."
      />
    </>
  );
}
