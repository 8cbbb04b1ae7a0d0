import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { type Accepted, api, type Session, setCsrfToken } from '../api.ts';
import { ErrorMessage, Field, Notice } from '../ui.tsx';

function useSignIn() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  return useMutation({
    mutationFn: (body: { email: string; password: string }) =>
      api<Session>('/api/auth/login', { method: 'POST', body }),
    onSuccess: async (session) => {
      setCsrfToken(session.csrf_token);
      queryClient.setQueryData(['session'], session);
      await navigate('/');
    },
  });
}

export function SignIn() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signIn = useSignIn();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    signIn.mutate({ email, password });
  };
  return (
    <div className="auth-card">
      <h1>Sign in to Tollgate</h1>
      <form onSubmit={submit}>
        <Field label="E-mail" type="email" value={email} onChange={setEmail} required autoComplete="email" />
        <Field
          label="Password"
          type="password"
          value={password}
          onChange={setPassword}
          required
          autoComplete="current-password"
        />
        <ErrorMessage error={signIn.error} />
        <button type="submit" disabled={signIn.isPending}>
          Sign in
        </button>
      </form>
      <p>
        New here? <Link to="/register">Create an account</Link> (USD 1.00 of trial credit).
      </p>
      <p>
        <Link to="/forgot-password">Forgot your password?</Link>
      </p>
    </div>
  );
}

export function SignUp() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signIn = useSignIn();
  const register = useMutation({
    mutationFn: (body: { email: string; password: string }) =>
      api('/api/auth/register', { method: 'POST', body }),
    onSuccess: () => signIn.mutate({ email, password }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    register.mutate({ email, password });
  };
  return (
    <div className="auth-card">
      <h1>Create a Tollgate account</h1>
      <form onSubmit={submit}>
        <Field label="E-mail" type="email" value={email} onChange={setEmail} required autoComplete="email" />
        <Field
          label="Password"
          type="password"
          value={password}
          onChange={setPassword}
          required
          autoComplete="new-password"
          hint="At least 8 characters."
        />
        <ErrorMessage error={register.error ?? signIn.error} />
        <button type="submit" disabled={register.isPending || signIn.isPending}>
          Create account
        </button>
      </form>
      <p>
        Already registered? <Link to="/login">Sign in</Link>
      </p>
    </div>
  );
}

export function ForgotPassword() {
  const [email, setEmail] = useState('');
  const request = useMutation({
    mutationFn: () => api<Accepted>('/api/auth/password-reset', { method: 'POST', body: { email } }),
  });
  return (
    <div className="auth-card">
      <h1>Reset your password</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          request.mutate();
        }}
      >
        <Field label="E-mail" type="email" value={email} onChange={setEmail} required autoComplete="email" />
        <ErrorMessage error={request.error} />
        {request.isSuccess && (
          <Notice>If an account uses this address, a reset link (valid one hour) is on its way.</Notice>
        )}
        <button type="submit" disabled={request.isPending}>
          Send reset link
        </button>
      </form>
      <p>
        <Link to="/login">Back to sign-in</Link>
      </p>
    </div>
  );
}

export function ResetPassword() {
  const [params] = useSearchParams();
  const token = params.get('token') ?? '';
  const [password, setPassword] = useState('');
  const reset = useMutation({
    mutationFn: () => api('/api/auth/password-reset/confirm', { method: 'POST', body: { token, password } }),
  });
  return (
    <div className="auth-card">
      <h1>Choose a new password</h1>
      {reset.isSuccess ? (
        <Notice>
          Your password is changed and every session is signed out. <Link to="/login">Sign in</Link>
        </Notice>
      ) : (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            reset.mutate();
          }}
        >
          <Field
            label="New password"
            type="password"
            value={password}
            onChange={setPassword}
            required
            autoComplete="new-password"
            hint="At least 8 characters."
          />
          <ErrorMessage
            error={token ? reset.error : new Error('This link has no token; ask for a new one.')}
          />
          <button type="submit" disabled={reset.isPending || !token}>
            Set new password
          </button>
        </form>
      )}
    </div>
  );
}

export function VerifyEmail() {
  const [params] = useSearchParams();
  const token = params.get('token') ?? '';
  const verify = useMutation({
    mutationFn: () => api('/api/auth/verify-email', { method: 'POST', body: { token } }),
  });
  const started = useRef(false);
  useEffect(() => {
    if (started.current || !token) return;
    started.current = true;
    verify.mutate();
  }, [token, verify]);
  return (
    <div className="auth-card">
      <h1>Verify your e-mail address</h1>
      {verify.isPending && <p>Checking the link…</p>}
      {verify.isSuccess && <Notice>Your e-mail address is verified.</Notice>}
      <ErrorMessage error={token ? verify.error : new Error('This link has no token.')} />
      <p>
        <Link to="/">Go to the dashboard</Link>
      </p>
    </div>
  );
}
