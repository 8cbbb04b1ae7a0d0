-- Usage history partitioned by UTC day, so that retention drops whole days (no mass DELETE, no dead rows, no
-- WAL storm) and inserts keep touching small indexes however long the history is.
--
-- The key is (created_at, request_id): a partitioned table's unique keys must hold the partition column, and a
-- settlement replayed from its journal carries the time it was first recorded, so the pair still stops a
-- request from being recorded twice. The same key orders the export (keyset pages over a bounded range); the
-- per-account index ends with request_id for the same reason. The index on created_at alone (only retention
-- used it) goes: retention drops partitions.
--
-- Columns are ordered widest first (no alignment padding), and counts that fit 32 bits are INTEGER.
ALTER TABLE usage_records RENAME TO usage_records_unpartitioned;
ALTER TABLE usage_records_unpartitioned DROP CONSTRAINT usage_records_pkey;
DROP INDEX usage_records_created;
DROP INDEX usage_records_account;
DROP INDEX usage_records_key;

CREATE TABLE usage_records (
  created_at BIGINT NOT NULL,
  cost_micros BIGINT NOT NULL,
  uncollected_micros BIGINT NOT NULL DEFAULT 0,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  latency_ms INTEGER NOT NULL,
  ttft_ms INTEGER,
  estimated SMALLINT NOT NULL,
  request_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  model TEXT NOT NULL,
  status TEXT NOT NULL,
  deployment TEXT,
  PRIMARY KEY (created_at, request_id)
) PARTITION BY RANGE (created_at);
CREATE INDEX usage_records_account ON usage_records (account_id, created_at, request_id);
CREATE INDEX usage_records_key ON usage_records (key_id, created_at);
-- Rows no day partition takes (the job that creates them ahead fell behind): kept, never lost.
CREATE TABLE usage_records_default PARTITION OF usage_records DEFAULT;

-- The day partition starting at epoch day `d` (UTC), in the schema of the usage_records it is called for. A day
-- whose rows already went to the default partition keeps them there (retention deletes them in time).
CREATE FUNCTION tollgate_usage_partition(d BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  name TEXT := 'usage_records_' || to_char(to_timestamp(d * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');
BEGIN
  IF to_regclass(format('%I.%I', current_schema(), name)) IS NOT NULL THEN
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM usage_records_default WHERE created_at >= d * 86400000 AND created_at < (d + 1) * 86400000) THEN
    RETURN;
  END IF;
  EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.usage_records FOR VALUES FROM (%s) TO (%s)',
    current_schema(), name, current_schema(), d * 86400000, (d + 1) * 86400000);
END
$$;

DO $$
DECLARE d BIGINT;
BEGIN
  FOR d IN SELECT DISTINCT created_at / 86400000 FROM usage_records_unpartitioned
           UNION SELECT floor(extract(epoch FROM now()) / 86400)::bigint + g FROM generate_series(-1, 7) AS g
  LOOP
    PERFORM tollgate_usage_partition(d);
  END LOOP;
END
$$;

INSERT INTO usage_records (created_at, cost_micros, uncollected_micros, prompt_tokens, completion_tokens, latency_ms,
  ttft_ms, estimated, request_id, account_id, key_id, model, status, deployment)
SELECT created_at, cost_micros, uncollected_micros, prompt_tokens, completion_tokens, latency_ms, ttft_ms, estimated,
  request_id, account_id, key_id, model, status, deployment
FROM usage_records_unpartitioned;
DROP TABLE usage_records_unpartitioned;

-- Every account's usage per UTC day, plan (the account's plan when it was used) and model: what the
-- operators' statistics read, a few rows per day whatever the number of accounts.
CREATE TABLE usage_daily_totals (
  day TEXT NOT NULL,
  plan TEXT NOT NULL,
  model TEXT NOT NULL,
  requests BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  cost_micros BIGINT NOT NULL,
  PRIMARY KEY (day, plan, model)
);
INSERT INTO usage_daily_totals (day, plan, model, requests, prompt_tokens, completion_tokens, cost_micros)
SELECT u.day, a.plan, u.model, SUM(u.requests), SUM(u.prompt_tokens), SUM(u.completion_tokens), SUM(u.cost_micros)
FROM usage_daily u JOIN accounts a ON a.id = u.account_id
GROUP BY u.day, a.plan, u.model;
