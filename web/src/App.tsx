import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, type ReactElement, Suspense, useEffect } from 'react';
import { Navigate, NavLink, Route, Routes, useLocation, useNavigate } from 'react-router';
import {
  ACCOUNT_PAGES,
  type AccountPath,
  SIGNED_OUT_PAGES,
  type SignedOutPath,
} from '../../src/http/dashboard-pages.ts';
import { api, ApiError, type Session, setCsrfToken } from './api.ts';
import { ForgotPassword, ResetPassword, SignIn, SignUp, VerifyEmail } from './pages/Auth.tsx';
import { Billing } from './pages/Billing.tsx';
import { Keys } from './pages/Keys.tsx';
import { Members } from './pages/Members.tsx';
import { Overview } from './pages/Overview.tsx';
import { Playground } from './pages/Playground.tsx';
import { forgetPlayground } from './playground/state.ts';
import { Settings } from './pages/Settings.tsx';
import { UsagePage } from './pages/Usage.tsx';
import { Webhooks } from './pages/Webhooks.tsx';

// Only operators download the console: account holders never load this chunk.
const OperatorConsole = lazy(() => import('./operator/OperatorConsole.tsx'));

// Each page of the one list (src/http/dashboard-pages.ts, which the server answers too) and what it shows.
const ACCOUNT_ELEMENTS: Record<AccountPath, ReactElement> = {
  '/': <Overview />,
  '/keys': <Keys />,
  '/usage': <UsagePage />,
  '/billing': <Billing />,
  '/webhooks': <Webhooks />,
  '/members': <Members />,
  '/playground': <Playground />,
  '/settings': <Settings />,
};
const SIGNED_OUT_ELEMENTS: Record<SignedOutPath, ReactElement> = {
  '/login': <SignIn />,
  '/register': <SignUp />,
  '/forgot-password': <ForgotPassword />,
  '/reset-password': <ResetPassword />,
  '/verify-email': <VerifyEmail />,
};
const pageRoutes = (pages: readonly { path: AccountPath | SignedOutPath }[]) =>
  pages.map((page) => (
    <Route
      key={page.path}
      path={page.path}
      element={{ ...ACCOUNT_ELEMENTS, ...SIGNED_OUT_ELEMENTS }[page.path]}
    />
  ));

/** The signed-in browser's session, or null when there is none. */
export function useSession() {
  return useQuery({
    queryKey: ['session'],
    queryFn: async (): Promise<Session | null> => {
      try {
        const session = await api<Session>('/api/auth/session');
        setCsrfToken(session.csrf_token);
        return session;
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) return null;
        throw error;
      }
    },
    staleTime: 60_000,
  });
}

export function App() {
  const session = useSession();
  const location = useLocation();
  useEffect(() => {
    if (location.pathname.startsWith('/operator')) return; // the console titles its own pages
    const page = ACCOUNT_PAGES.find((p) => p.path === location.pathname);
    document.title = page ? `${page.label} · Tollgate` : 'Tollgate dashboard';
  }, [location.pathname]);

  if (session.isPending) return <p className="loading">Loading…</p>;
  if (session.isError)
    return <p role="alert">The dashboard cannot reach the server: {String(session.error)}</p>;

  const fromMail = pageRoutes(SIGNED_OUT_PAGES.filter((page) => page.fromMail));
  if (!session.data) {
    return (
      <main className="auth">
        <Routes>
          {pageRoutes(SIGNED_OUT_PAGES)}
          <Route path="*" element={<Navigate to="/login" replace state={{ from: location.pathname }} />} />
        </Routes>
      </main>
    );
  }
  const operator = session.data.operator === true;
  return (
    <>
      <Header email={session.data.account.email} operator={operator} />
      <main>
        <Routes>
          {pageRoutes(ACCOUNT_PAGES)}
          <Route
            path="/operator/*"
            element={
              operator ? (
                <Suspense fallback={<p className="loading">Loading the operator console…</p>}>
                  <OperatorConsole />
                </Suspense>
              ) : (
                <NotAllowed />
              )
            }
          />
          {fromMail}
          <Route path="*" element={<Navigate to="/" replace />} />
        </Routes>
      </main>
    </>
  );
}

/** What an account holder sees on an operator page: no data, and no console code is loaded. */
function NotAllowed() {
  useEffect(() => {
    document.title = 'Not allowed · Tollgate';
  }, []);
  return (
    <>
      <h1>Not allowed</h1>
      <p role="alert">This page is for Tollgate operators. Your account is not an operator.</p>
    </>
  );
}

function Header({ email, operator }: { email: string; operator: boolean }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const signOut = useMutation({
    mutationFn: () => api('/api/auth/logout', { method: 'POST' }),
    onSettled: async () => {
      setCsrfToken('');
      forgetPlayground();
      queryClient.clear();
      await navigate('/login');
      await queryClient.invalidateQueries({ queryKey: ['session'] });
    },
  });
  return (
    <header className="top">
      <div className="brand">Tollgate</div>
      <nav aria-label="Dashboard">
        <ul>
          {ACCOUNT_PAGES.map((page) => (
            <li key={page.path}>
              <NavLink to={page.path} end>
                {page.label}
              </NavLink>
            </li>
          ))}
          {operator && (
            <li>
              <NavLink to="/operator">Operator</NavLink>
            </li>
          )}
        </ul>
      </nav>
      <div className="who">
        <span className="email">{email}</span>
        <button
          type="button"
          className="secondary"
          onClick={() => signOut.mutate()}
          disabled={signOut.isPending}
        >
          Sign out
        </button>
      </div>
    </header>
  );
}
