import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, type List, type Plan } from '../api.ts';
import { usd } from '../format.ts';
import { ErrorMessage, Field, Notice, Section } from '../ui.tsx';
import { type AdminAccount, fromLocalInput } from './operator-api.ts';
import { Select } from './Select.tsx';

/** A number field's value as a number, or null when left empty (no cap). */
const optionalNumber = (value: string): number | null => (value.trim() === '' ? null : Number(value));
const text = (value: number | null | undefined): string => (value == null ? '' : String(value));

/** The operator's actions on one account; each is audited by the server. */
export function AccountActions({ account }: { account: AdminAccount }) {
  const queryClient = useQueryClient();
  const path = `/api/admin/accounts/${encodeURIComponent(account.id)}`;
  const [message, setMessage] = useState('');
  const [reason, setReason] = useState('');
  const [plan, setPlan] = useState(account.plan);
  const [amount, setAmount] = useState('');
  const [expires, setExpires] = useState('');
  const [rpm, setRpm] = useState(text(account.limits_override?.rpm));
  const [tpm, setTpm] = useState(text(account.limits_override?.tpm));
  const [daily, setDaily] = useState(text(account.limits_override?.daily_tokens));
  const [creditLimit, setCreditLimit] = useState(text(account.credit_limit_usd));
  useEffect(() => setPlan(account.plan), [account.plan]);
  const plans = useQuery({ queryKey: ['plans'], queryFn: () => api<List<Plan>>('/plans') });
  const act = useMutation({
    mutationFn: async (action: { method: string; to: string; body?: unknown; done: string }) => {
      await api(`${path}${action.to}`, {
        method: action.method,
        ...(action.body !== undefined ? { body: action.body } : {}),
      });
      return action.done;
    },
    onMutate: () => setMessage(''),
    onSuccess: async (done) => {
      setMessage(done);
      await queryClient.invalidateQueries({ queryKey: ['operator'] });
    },
  });
  const suspended = account.status === 'suspended';
  return (
    <>
      {message && !act.error && <Notice>{message}</Notice>}
      <ErrorMessage error={act.error} />
      <div className="grid">
        <Section title={suspended ? 'Unsuspend' : 'Suspend'}>
          {suspended ? (
            <button
              type="button"
              disabled={act.isPending}
              onClick={() => act.mutate({ method: 'POST', to: '/unsuspend', done: 'Account unsuspended.' })}
            >
              Unsuspend account
            </button>
          ) : (
            <form
              onSubmit={(event) => {
                event.preventDefault();
                act.mutate({
                  method: 'POST',
                  to: '/suspend',
                  body: reason.trim() ? { reason: reason.trim() } : {},
                  done: 'Account suspended.',
                });
              }}
            >
              <Field label="Reason" value={reason} onChange={setReason} hint="Kept in the audit log." />
              <button type="submit" className="danger" disabled={act.isPending}>
                Suspend account
              </button>
            </form>
          )}
        </Section>
        <Section title="Grant credit">
          <form
            onSubmit={(event) => {
              event.preventDefault();
              const expiresAt = fromLocalInput(expires);
              act.mutate({
                method: 'POST',
                to: '/credits',
                body: { amount_usd: Number(amount), ...(expiresAt ? { expires_at: expiresAt } : {}) },
                done: `Granted ${usd(Number(amount))}.`,
              });
            }}
          >
            <Field
              label="Amount (USD)"
              type="number"
              min={0.01}
              step="0.01"
              value={amount}
              onChange={setAmount}
              required
            />
            <Field
              label="Expires (UTC, optional)"
              type="datetime-local"
              value={expires}
              onChange={setExpires}
            />
            <button type="submit" disabled={act.isPending}>
              Grant credit
            </button>
          </form>
        </Section>
        <Section title="Plan">
          <form
            onSubmit={(event) => {
              event.preventDefault();
              act.mutate({ method: 'PUT', to: '/plan', body: { plan }, done: `Plan set to ${plan}.` });
            }}
          >
            <Select
              label="New plan"
              value={plan}
              onChange={setPlan}
              options={(plans.data?.data ?? [{ id: account.plan, name: account.plan }]).map(
                (p): [string, string] => [p.id, p.name],
              )}
            />
            <button type="submit" disabled={act.isPending || plan === account.plan}>
              Change plan
            </button>
          </form>
        </Section>
        <Section title="E-mail">
          <p>
            {account.email_verified
              ? 'The e-mail address is verified.'
              : 'The e-mail address is not verified.'}
          </p>
          <button
            type="button"
            className="secondary"
            disabled={act.isPending || account.email_verified}
            onClick={() =>
              act.mutate({ method: 'POST', to: '/resend-verification', done: 'Verification e-mail sent.' })
            }
          >
            Resend verification
          </button>
        </Section>
      </div>
      <Section title="Enterprise caps and credit limit">
        <p className="hint">
          Empty caps mean the plan&apos;s own limits; a credit limit of 0 (or empty) lets the balance go no
          lower than zero.
        </p>
        <form
          className="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            act.mutate({
              method: 'PUT',
              to: '/limits',
              body: {
                rpm: optionalNumber(rpm),
                tpm: optionalNumber(tpm),
                daily_tokens: optionalNumber(daily),
                credit_limit_usd: optionalNumber(creditLimit) ?? 0,
              },
              done: 'Caps and credit limit saved.',
            });
          }}
        >
          <Field label="Requests per minute" type="number" min={1} value={rpm} onChange={setRpm} />
          <Field label="Tokens per minute" type="number" min={1} value={tpm} onChange={setTpm} />
          <Field label="Tokens per day" type="number" min={1} value={daily} onChange={setDaily} />
          <Field
            label="Credit limit (USD)"
            type="number"
            min={0}
            step="0.01"
            value={creditLimit}
            onChange={setCreditLimit}
          />
          <button type="submit" disabled={act.isPending}>
            Save caps
          </button>
        </form>
      </Section>
    </>
  );
}
