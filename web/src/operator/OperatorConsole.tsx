import { type ReactElement, useEffect } from 'react';
import { Navigate, NavLink, Route, Routes, useLocation } from 'react-router';
import { AccountPage } from './AccountPage.tsx';
import { Accounts } from './Accounts.tsx';
import { Announcements } from './Announcements.tsx';
import { AuditLog } from './AuditLog.tsx';
import { Deployments } from './Deployments.tsx';
import { Statistics } from './Statistics.tsx';
import { WebhookHealthPage } from './WebhookHealth.tsx';
import { OPERATOR_PAGES, type OperatorPath } from '../../../src/http/dashboard-pages.ts';

// Each console page of the one list (src/http/dashboard-pages.ts) and what it shows.
const ELEMENTS: Record<OperatorPath, ReactElement> = {
  '/operator/accounts': <Accounts />,
  '/operator/statistics': <Statistics />,
  '/operator/deployments': <Deployments />,
  '/operator/webhooks': <WebhookHealthPage />,
  '/operator/announcements': <Announcements />,
  '/operator/audit': <AuditLog />,
};

/** The operator console: its own navigation and pages under /operator (loaded only for operators). */
export default function OperatorConsole() {
  const location = useLocation();
  useEffect(() => {
    const page = OPERATOR_PAGES.find((p) => location.pathname.startsWith(p.path));
    document.title = `${page ? page.label : 'Operator'} · Tollgate operator`;
  }, [location.pathname]);
  return (
    <>
      <nav aria-label="Operator console" className="subnav">
        <ul>
          {OPERATOR_PAGES.map((page) => (
            <li key={page.path}>
              <NavLink to={page.path}>{page.label}</NavLink>
            </li>
          ))}
        </ul>
      </nav>
      <Routes>
        <Route index element={<Navigate to="accounts" replace />} />
        {OPERATOR_PAGES.map((page) => (
          <Route key={page.path} path={page.path.slice('/operator/'.length)} element={ELEMENTS[page.path]} />
        ))}
        <Route path="accounts/:id" element={<AccountPage />} />
        <Route path="*" element={<Navigate to="accounts" replace />} />
      </Routes>
    </>
  );
}
