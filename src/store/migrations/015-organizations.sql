-- Organizations. An account is an organization: its balance, plan, keys, endpoint and usage stay keyed by the
-- account id. A member links a sign-in (the account a person signs in with) to an organization with a role;
-- every existing account becomes a one-member organization with its owner. Written in the SQL both SQLite
-- and PostgreSQL accept.
CREATE TABLE members (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES accounts (id),
  person_id TEXT NOT NULL REFERENCES accounts (id),
  role TEXT NOT NULL,
  -- The member's spending limit across all its keys (µUSD per period; null: none), its period, and the public
  -- model ids its keys may call (a JSON array; null: every model).
  spend_limit_micros BIGINT,
  limit_period TEXT,
  allowed_models TEXT,
  created_at BIGINT NOT NULL,
  UNIQUE (organization_id, person_id)
);
CREATE INDEX members_person ON members (person_id);
INSERT INTO members (id, organization_id, person_id, role, created_at)
  SELECT 'mem_' || id, id, id, 'owner', created_at FROM accounts;

-- The organization's display name (null: its e-mail).
ALTER TABLE accounts ADD COLUMN org_name TEXT;

-- Which member a key belongs to; every existing key is its account owner's.
ALTER TABLE api_keys ADD COLUMN member_id TEXT;
UPDATE api_keys SET member_id = 'mem_' || account_id;
CREATE INDEX api_keys_member ON api_keys (member_id);

-- Invitations: single-use (accepted_at), expiring (expires_at), revocable (revoked_at); only the token's hash is kept.
CREATE TABLE invitations (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  organization_id TEXT NOT NULL REFERENCES accounts (id),
  email TEXT NOT NULL,
  role TEXT NOT NULL,
  invited_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  accepted_at BIGINT,
  revoked_at BIGINT
);
CREATE INDEX invitations_organization ON invitations (organization_id);
