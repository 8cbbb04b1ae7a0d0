// The dashboard's pages, listed once: the server answers each of these paths with the single-page app
// (http/web-app.ts) and the app routes and labels them (web/src/App.tsx, web/src/operator/OperatorConsole.tsx).
// This module imports nothing: the web app reads it as it is.

/** The signed-in account's pages, in the order of the navigation. */
export const ACCOUNT_PAGES = [
  { path: '/', label: 'Overview' },
  { path: '/keys', label: 'API keys' },
  { path: '/usage', label: 'Usage' },
  { path: '/billing', label: 'Billing' },
  { path: '/webhooks', label: 'Webhooks' },
  { path: '/members', label: 'Members' },
  { path: '/playground', label: 'Playground' },
  { path: '/settings', label: 'Settings' },
] as const;

/** Pages for a signed-out browser; those opened from links in mail also open signed in. */
export const SIGNED_OUT_PAGES = [
  { path: '/login', fromMail: false },
  { path: '/register', fromMail: false },
  { path: '/forgot-password', fromMail: false },
  { path: '/reset-password', fromMail: true },
  { path: '/verify-email', fromMail: true },
] as const;

/** The operator console's pages, in the order of its navigation (the app shows them to operators only). */
export const OPERATOR_PAGES = [
  { path: '/operator/accounts', label: 'Accounts' },
  { path: '/operator/statistics', label: 'Statistics' },
  { path: '/operator/deployments', label: 'Deployments' },
  { path: '/operator/webhooks', label: 'Webhooks' },
  { path: '/operator/announcements', label: 'Announcements' },
  { path: '/operator/audit', label: 'Audit log' },
] as const;

export type AccountPath = (typeof ACCOUNT_PAGES)[number]['path'];
export type SignedOutPath = (typeof SIGNED_OUT_PAGES)[number]['path'];
export type OperatorPath = (typeof OPERATOR_PAGES)[number]['path'];

/** Every path the server answers with the app: the pages above, the console's entry and an account's page. */
export const DASHBOARD_PATHS: readonly string[] = [
  ...ACCOUNT_PAGES.map((page) => page.path),
  ...SIGNED_OUT_PAGES.map((page) => page.path),
  '/operator',
  ...OPERATOR_PAGES.map((page) => page.path),
  '/operator/accounts/:id',
];
