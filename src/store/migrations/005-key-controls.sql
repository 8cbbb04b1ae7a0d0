-- Per-key controls (issue 22): a spending limit with a reset period, an expiry, a list of allowed models.
-- Written in the SQL both SQLite and PostgreSQL accept.

-- The limit in micro-USD (null: none), its period ('daily', 'weekly', 'monthly', 'never'), the expiry
-- (ms since the epoch; null: never) and the allowed public model ids (a JSON array; null: every model).
ALTER TABLE api_keys ADD COLUMN spend_limit_micros BIGINT;
ALTER TABLE api_keys ADD COLUMN limit_period TEXT;
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN allowed_models TEXT;

-- Which key a hold row is for, so a key's outstanding holds count against its limit (PostgreSQL's holds).
ALTER TABLE holds ADD COLUMN key_id TEXT;
CREATE INDEX holds_key ON holds (key_id);

-- A key's spend in a period is summed from the daily rollup the settlement already writes.
CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
