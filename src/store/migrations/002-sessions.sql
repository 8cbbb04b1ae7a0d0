-- Dashboard sign-in: server-side sessions and password-reset tokens (issue 17).
-- Secrets are never stored: a session row and a reset token keep only the SHA-256 of their secret.

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  csrf_token TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_account ON sessions (account_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);

CREATE TABLE password_reset_tokens (
  token_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX password_reset_tokens_account ON password_reset_tokens (account_id);
