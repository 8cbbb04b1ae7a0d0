-- Holds in Redis (issue 20). Written in the SQL both SQLite and PostgreSQL accept.

-- Every settlement that charges an account adds one to its ledger version, in the same transaction. Redis
-- keeps each account's spendable balance as of a version: a balance read from an older version is never
-- written over a newer one, and a settlement applies its charge to the Redis balance only when it is the
-- very next version (otherwise the balance is read again from here).
ALTER TABLE accounts ADD COLUMN ledger_version BIGINT NOT NULL DEFAULT 0;
