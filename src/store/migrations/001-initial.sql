-- Times are integer milliseconds since the epoch (UTC); money is integer micro-USD.
-- Written in the SQL both SQLite and PostgreSQL accept.

CREATE TABLE settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  email_verified INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL DEFAULT 'active',
  plan TEXT NOT NULL,
  plan_expires_at BIGINT,
  rpm_limit BIGINT,
  tpm_limit BIGINT,
  daily_token_limit BIGINT,
  credit_limit_micros BIGINT NOT NULL DEFAULT 0,
  debt_micros BIGINT NOT NULL DEFAULT 0,
  held_micros BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  last_active_at BIGINT
);
CREATE INDEX accounts_last_active ON accounts (last_active_at);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  name TEXT NOT NULL,
  prefix TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  allowed_ips TEXT,
  status TEXT NOT NULL DEFAULT 'active',
  created_at BIGINT NOT NULL,
  revoked_at BIGINT
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE email_tokens (
  token_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);

CREATE TABLE credit_grants (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  kind TEXT NOT NULL,
  amount_micros BIGINT NOT NULL,
  remaining_micros BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  source TEXT
);
CREATE INDEX credit_grants_account ON credit_grants (account_id, expires_at);

CREATE TABLE holds (
  request_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  amount_micros BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX holds_expiry ON holds (expires_at);

CREATE TABLE usage_records (
  request_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  model TEXT NOT NULL,
  deployment TEXT,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  estimated INTEGER NOT NULL,
  cost_micros BIGINT NOT NULL,
  uncollected_micros BIGINT NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  latency_ms BIGINT NOT NULL,
  ttft_ms BIGINT,
  created_at BIGINT NOT NULL
);
CREATE INDEX usage_records_created ON usage_records (created_at);
CREATE INDEX usage_records_account ON usage_records (account_id, created_at);

-- One row per UTC day, account, key and model: what statistics and /api/usage read.
CREATE TABLE usage_daily (
  day TEXT NOT NULL,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  model TEXT NOT NULL,
  requests BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  cost_micros BIGINT NOT NULL,
  PRIMARY KEY (day, account_id, key_id, model)
);
CREATE INDEX usage_daily_account ON usage_daily (account_id, day);

CREATE TABLE orders (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  kind TEXT NOT NULL,
  plan TEXT,
  amount_micros BIGINT NOT NULL,
  currency TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT,
  provider TEXT NOT NULL,
  provider_ref TEXT,
  created_at BIGINT NOT NULL,
  completed_at BIGINT
);
CREATE INDEX orders_account ON orders (account_id, created_at);

CREATE TABLE processed_events (
  provider TEXT NOT NULL,
  event_id TEXT NOT NULL,
  processed_at BIGINT NOT NULL,
  PRIMARY KEY (provider, event_id)
);

CREATE TABLE webhook_endpoints (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id),
  url TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE webhook_events (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  event_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts BIGINT NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  lease_until BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  finished_at BIGINT
);
CREATE INDEX webhook_events_due ON webhook_events (status, next_attempt_at);

CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  event_id TEXT NOT NULL REFERENCES webhook_events (id),
  account_id TEXT NOT NULL,
  attempt BIGINT NOT NULL,
  url TEXT NOT NULL,
  status_code BIGINT,
  error TEXT,
  latency_ms BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, created_at);

CREATE TABLE leases (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  until_at BIGINT NOT NULL
);
