-- Operators (issue 18): roles, the audit log, announcements, the durable mail queue and health samples.
-- Written in the SQL both SQLite and PostgreSQL accept.

-- 'user' or 'operator'; an operator's session or key passes routes declared `auth: 'admin'`.
ALTER TABLE accounts ADD COLUMN role TEXT NOT NULL DEFAULT 'user';
-- Why an operator suspended the account (null when active or when no reason was given).
ALTER TABLE accounts ADD COLUMN suspended_reason TEXT;
CREATE INDEX accounts_role ON accounts (role);
-- The accounts console pages by creation time, optionally within a plan or a status (100,000 accounts).
CREATE INDEX accounts_created ON accounts (created_at, id);
CREATE INDEX accounts_plan_created ON accounts (plan, created_at, id);
CREATE INDEX accounts_status_created ON accounts (status, created_at, id);
CREATE INDEX accounts_plan_status_created ON accounts (plan, status, created_at, id);
CREATE INDEX accounts_plan_email ON accounts (plan, email);
-- Sorting by last activity, never-active accounts counting as the least recent, on both engines alike.
CREATE INDEX accounts_activity ON accounts ((COALESCE(last_active_at, 0)), id);

-- Append-only: the store has no statement that updates or deletes a row of it.
CREATE TABLE audit_log (
  id TEXT PRIMARY KEY,
  at BIGINT NOT NULL,
  actor TEXT NOT NULL,
  actor_account_id TEXT,
  action TEXT NOT NULL,
  account_id TEXT,
  details TEXT NOT NULL,
  ip TEXT NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at, id);
CREATE INDEX audit_log_account ON audit_log (account_id, at);

-- models: a JSON array of public model ids; breaking notices carry effective_at (ms since the epoch).
CREATE TABLE announcements (
  id TEXT PRIMARY KEY,
  title TEXT NOT NULL,
  body TEXT NOT NULL,
  severity TEXT NOT NULL,
  models TEXT NOT NULL,
  starts_at BIGINT NOT NULL,
  ends_at BIGINT,
  breaking INTEGER NOT NULL DEFAULT 0,
  effective_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  created_by TEXT NOT NULL
);
CREATE INDEX announcements_created ON announcements (created_at);

-- One row per e-mail to send; the id names what it is for (one per announcement and account), so queuing
-- twice cannot make two. A sender claims due rows with a lease and marks each sent.
CREATE TABLE mail_queue (
  id TEXT PRIMARY KEY,
  recipient TEXT NOT NULL,
  subject TEXT NOT NULL,
  body TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending',
  attempts BIGINT NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  lease_until BIGINT NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at BIGINT NOT NULL,
  sent_at BIGINT
);
CREATE INDEX mail_queue_due ON mail_queue (status, next_attempt_at);

-- Each public model's state once a minute (kept 90 days): the status page's availability bars.
CREATE TABLE health_samples (
  model TEXT NOT NULL,
  at BIGINT NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY (model, at)
);
CREATE INDEX health_samples_at ON health_samples (at);
