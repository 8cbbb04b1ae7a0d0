-- The export pages by (created_at, request_id), over everything or one account: indexes that end with both,
-- so a page is a bounded index range. The table and its columns stay as they are. The two indexes these replace
-- are each a leading part of one of them, which serves every read they served.
CREATE INDEX IF NOT EXISTS usage_records_time ON usage_records (created_at, request_id);
CREATE INDEX IF NOT EXISTS usage_records_account_time ON usage_records (account_id, created_at, request_id);
DROP INDEX IF EXISTS usage_records_created;
DROP INDEX IF EXISTS usage_records_account;

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

-- The totals follow the records in the database itself, whichever release wrote them: each record inserted adds
-- itself, net of what was left uncollected, and a change to a record (the part left uncollected, set after it
-- was inserted) adds the difference. Records deleted by retention leave the totals as they are, like the rollup.
CREATE TRIGGER usage_records_totals_insert AFTER INSERT ON usage_records
BEGIN
  INSERT INTO usage_daily_totals (day, plan, model, requests, prompt_tokens, completion_tokens, cost_micros)
  SELECT strftime('%Y-%m-%d', NEW.created_at / 1000, 'unixepoch'), plan, NEW.model, 1, NEW.prompt_tokens,
    NEW.completion_tokens, NEW.cost_micros - NEW.uncollected_micros
  FROM accounts WHERE id = NEW.account_id
  ON CONFLICT (day, plan, model) DO UPDATE SET requests = requests + excluded.requests,
    prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens,
    cost_micros = cost_micros + excluded.cost_micros;
END;
CREATE TRIGGER usage_records_totals_update AFTER UPDATE ON usage_records
BEGIN
  INSERT INTO usage_daily_totals (day, plan, model, requests, prompt_tokens, completion_tokens, cost_micros)
  SELECT strftime('%Y-%m-%d', OLD.created_at / 1000, 'unixepoch'), plan, OLD.model, -1, -OLD.prompt_tokens,
    -OLD.completion_tokens, OLD.uncollected_micros - OLD.cost_micros
  FROM accounts WHERE id = OLD.account_id
  ON CONFLICT (day, plan, model) DO UPDATE SET requests = requests + excluded.requests,
    prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens,
    cost_micros = cost_micros + excluded.cost_micros;
  INSERT INTO usage_daily_totals (day, plan, model, requests, prompt_tokens, completion_tokens, cost_micros)
  SELECT strftime('%Y-%m-%d', NEW.created_at / 1000, 'unixepoch'), plan, NEW.model, 1, NEW.prompt_tokens,
    NEW.completion_tokens, NEW.cost_micros - NEW.uncollected_micros
  FROM accounts WHERE id = NEW.account_id
  ON CONFLICT (day, plan, model) DO UPDATE SET requests = requests + excluded.requests,
    prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens,
    cost_micros = cost_micros + excluded.cost_micros;
END;
