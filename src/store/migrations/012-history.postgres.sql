-- Usage records keep their table and columns as they are (one plain table keyed by request_id alone, which every
-- release that inserts with ON CONFLICT (request_id) needs; see docs/decisions.md): copying a large history into a
-- new table would hold every settlement of both releases for the length of the copy.
--
-- Writes to the records wait from here to the commit (reads go on): the totals below are filled from the rollup
-- and their triggers created inside that window, so no record is counted twice or missed, whichever release
-- settles it.
LOCK TABLE usage_records IN SHARE ROW EXCLUSIVE MODE;

-- The export pages by (created_at, request_id), over everything or one account: indexes that end with both, so a
-- page is a bounded index range. Built here unless already there: on a large history, build them beforehand with
-- CREATE INDEX CONCURRENTLY under these names (docs/operations.md) and this migration does not wait for them.
CREATE INDEX IF NOT EXISTS usage_records_time ON usage_records (created_at, request_id);
CREATE INDEX IF NOT EXISTS usage_records_account_time ON usage_records (account_id, created_at, request_id);

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

-- The totals follow the records in the database itself, whichever release wrote them (one that predates the
-- totals included): each statement that inserts or changes usage records adds what it added, net of what was
-- left uncollected, once per statement and in key order (concurrent settlements lock these shared rows in the
-- same order). Records deleted by retention leave the totals as they are, like the daily rollup.
CREATE FUNCTION tollgate_usage_totals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO usage_daily_totals AS t (day, plan, model, requests, prompt_tokens, completion_tokens, cost_micros)
    SELECT to_char(to_timestamp(n.created_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, a.plan, n.model,
      COUNT(*), SUM(n.prompt_tokens), SUM(n.completion_tokens), SUM(n.cost_micros - n.uncollected_micros)
    FROM new_records n JOIN accounts a ON a.id = n.account_id
    GROUP BY 1, a.plan, n.model ORDER BY 1, a.plan, n.model
    ON CONFLICT (day, plan, model) DO UPDATE SET requests = t.requests + excluded.requests,
      prompt_tokens = t.prompt_tokens + excluded.prompt_tokens,
      completion_tokens = t.completion_tokens + excluded.completion_tokens,
      cost_micros = t.cost_micros + excluded.cost_micros;
  ELSE
    -- What the old versions of the rows counted goes, what the new ones count comes (usually only the part left
    -- uncollected, set after the record was inserted).
    INSERT INTO usage_daily_totals AS t (day, plan, model, requests, prompt_tokens, completion_tokens, cost_micros)
    SELECT d.day, a.plan, d.model, SUM(d.requests), SUM(d.prompt_tokens), SUM(d.completion_tokens), SUM(d.cost_micros)
    FROM (
      SELECT to_char(to_timestamp(created_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, account_id, model,
        1 AS requests, prompt_tokens, completion_tokens, cost_micros - uncollected_micros AS cost_micros
      FROM new_records
      UNION ALL
      SELECT to_char(to_timestamp(created_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), account_id, model,
        -1, -prompt_tokens, -completion_tokens, uncollected_micros - cost_micros
      FROM old_records
    ) AS d JOIN accounts a ON a.id = d.account_id
    GROUP BY d.day, a.plan, d.model
    HAVING SUM(d.requests) <> 0 OR SUM(d.prompt_tokens) <> 0 OR SUM(d.completion_tokens) <> 0 OR SUM(d.cost_micros) <> 0
    ORDER BY d.day, a.plan, d.model
    ON CONFLICT (day, plan, model) DO UPDATE SET requests = t.requests + excluded.requests,
      prompt_tokens = t.prompt_tokens + excluded.prompt_tokens,
      completion_tokens = t.completion_tokens + excluded.completion_tokens,
      cost_micros = t.cost_micros + excluded.cost_micros;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER usage_records_totals_insert AFTER INSERT ON usage_records
  REFERENCING NEW TABLE AS new_records FOR EACH STATEMENT EXECUTE FUNCTION tollgate_usage_totals();
CREATE TRIGGER usage_records_totals_update AFTER UPDATE ON usage_records
  REFERENCING OLD TABLE AS old_records NEW TABLE AS new_records FOR EACH STATEMENT EXECUTE FUNCTION tollgate_usage_totals();

-- The two indexes the new ones replace: each is a leading part of one above, which serves every read it served
-- (retention's oldest-first deletes, an account's recent requests), for this release and the previous one alike.
-- Dropped last: a drop locks out readers too, until the commit just after.
DROP INDEX IF EXISTS usage_records_created;
DROP INDEX IF EXISTS usage_records_account;
