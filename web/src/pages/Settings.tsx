import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { api, setCsrfToken } from '../api.ts';
import { ErrorMessage, Field, Notice, Section } from '../ui.tsx';
import { useAccount } from './Overview.tsx';

export function Settings() {
  const account = useAccount();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const resend = useMutation({ mutationFn: () => api('/api/auth/resend-verification', { method: 'POST' }) });
  const change = useMutation({
    mutationFn: () =>
      api('/api/auth/password', { method: 'POST', body: { current_password: current, new_password: next } }),
    onSuccess: () => {
      setCurrent('');
      setNext('');
    },
  });
  const everywhere = useMutation({
    mutationFn: () => api('/api/auth/logout-everywhere', { method: 'POST' }),
    onSuccess: async () => {
      setCsrfToken('');
      queryClient.clear();
      await navigate('/login');
      await queryClient.invalidateQueries({ queryKey: ['session'] });
    },
  });
  const a = account.data;
  return (
    <>
      <h1>Settings</h1>
      <Section title="E-mail">
        {a && (
          <p>
            {a.email} —{' '}
            {a.email_verified ? (
              <strong>verified</strong>
            ) : (
              <strong className="warn">not verified yet</strong>
            )}
          </p>
        )}
        {a && !a.email_verified && (
          <button type="button" onClick={() => resend.mutate()} disabled={resend.isPending}>
            Resend verification e-mail
          </button>
        )}
        {resend.isSuccess && <Notice>A new verification link is on its way.</Notice>}
        <ErrorMessage error={resend.error} />
      </Section>
      <Section title="Change password">
        <form
          onSubmit={(event) => {
            event.preventDefault();
            change.mutate();
          }}
        >
          <Field
            label="Current password"
            type="password"
            value={current}
            onChange={setCurrent}
            required
            autoComplete="current-password"
          />
          <Field
            label="New password"
            type="password"
            value={next}
            onChange={setNext}
            required
            autoComplete="new-password"
            hint="At least 8 characters. Your other sessions are signed out."
          />
          <ErrorMessage error={change.error} />
          {change.isSuccess && <Notice>Password changed; your other sessions are signed out.</Notice>}
          <button type="submit" disabled={change.isPending}>
            Change password
          </button>
        </form>
      </Section>
      <Section title="Sessions">
        <p>Signs out this browser and every other one signed in to this account. API keys keep working.</p>
        <button
          type="button"
          className="danger"
          onClick={() => everywhere.mutate()}
          disabled={everywhere.isPending}
        >
          Sign out everywhere
        </button>
        <ErrorMessage error={everywhere.error} />
      </Section>
    </>
  );
}
