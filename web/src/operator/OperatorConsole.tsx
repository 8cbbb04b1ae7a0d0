import { useEffect } from 'react';
import { Navigate, NavLink, Route, Routes, useLocation } from 'react-router';
import { AccountPage } from './AccountPage.tsx';
import { Accounts } from './Accounts.tsx';
import { Announcements } from './Announcements.tsx';
import { AuditLog } from './AuditLog.tsx';
import { Deployments } from './Deployments.tsx';
import { Statistics } from './Statistics.tsx';
import { WebhookHealthPage } from './WebhookHealth.tsx';

export const OPERATOR_PAGES = [
  { path: '/operator/accounts', label: 'Accounts' },
  { path: '/operator/statistics', label: 'Statistics' },
  { path: '/operator/deployments', label: 'Deployments' },
  { path: '/operator/webhooks', label: 'Webhooks' },
  { path: '/operator/announcements', label: 'Announcements' },
  { path: '/operator/audit', label: 'Audit log' },
] as const;

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
        <Route path="accounts" element={<Accounts />} />
        <Route path="accounts/:id" element={<AccountPage />} />
        <Route path="statistics" element={<Statistics />} />
        <Route path="deployments" element={<Deployments />} />
        <Route path="webhooks" element={<WebhookHealthPage />} />
        <Route path="announcements" element={<Announcements />} />
        <Route path="audit" element={<AuditLog />} />
        <Route path="*" element={<Navigate to="accounts" replace />} />
      </Routes>
    </>
  );
}
