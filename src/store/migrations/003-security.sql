-- Security hardening (docs/security.md). Written in the SQL both SQLite and PostgreSQL accept.

-- One free trial per mailbox: the canonical form of each address that registered (plus-tags dropped,
-- Gmail's dots ignored), so that alias addresses of one mailbox cannot each collect a trial credit.
CREATE TABLE trial_mailboxes (
  mailbox TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  created_at BIGINT NOT NULL
);

-- Accounts from before this table count by their stored address (unique and lower-case already).
INSERT INTO trial_mailboxes (mailbox, account_id, created_at)
  SELECT email, id, created_at FROM accounts;
