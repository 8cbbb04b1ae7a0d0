-- The billing cycle: subscriptions that renew, the test billing clock, invoices with a gapless number.
-- Written in the SQL both SQLite and PostgreSQL accept. Times are ms since the epoch, wall time.

-- How far an account's billing time runs ahead of wall time (test payments only): moving it forward also moves
-- the account's deadlines back by as much, so every check against wall time sees the same billing moment.
CREATE TABLE billing_clocks (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id),
  offset_ms BIGINT NOT NULL
);

-- One subscription per account: the paid plan it renews, the period, what happens at its end.
-- status: active, past_due (a renewal failed, in grace), canceled (ended at a period end), expired (grace ran out).
CREATE TABLE subscriptions (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id),
  plan TEXT NOT NULL,
  status TEXT NOT NULL,
  provider TEXT NOT NULL,
  provider_ref TEXT,
  period_start BIGINT NOT NULL,
  period_end BIGINT NOT NULL,
  cancel_at_period_end INTEGER NOT NULL DEFAULT 0,
  next_plan TEXT,
  next_attempt_at BIGINT,
  failed_attempts INTEGER NOT NULL DEFAULT 0,
  grace_until BIGINT,
  test_card_declines INTEGER NOT NULL DEFAULT 0,
  -- The overage cap the account chose, in USD as charged (µUSD); null: the plan's default.
  overage_cap_micros BIGINT,
  -- Overage at list prices whose charge failed: owed, and no longer counted against the account's balance.
  overage_owed_micros BIGINT NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL
);
CREATE INDEX subscriptions_due ON subscriptions (next_attempt_at);

-- The invoice number sequence: one row, moved in the transaction that issues the invoice, so a rolled-back
-- invoice gives its number back and the numbers have no gaps.
CREATE TABLE invoice_sequence (
  id INTEGER PRIMARY KEY,
  last_number BIGINT NOT NULL
);
INSERT INTO invoice_sequence (id, last_number) VALUES (1, 0);

-- lines: a JSON array of {description, amount_micros}; buyer: the account's billing details when issued.
CREATE TABLE invoices (
  id TEXT PRIMARY KEY,
  number BIGINT NOT NULL UNIQUE,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  order_id TEXT,
  issued_at BIGINT NOT NULL,
  currency TEXT NOT NULL,
  total_micros BIGINT NOT NULL,
  lines TEXT NOT NULL,
  buyer TEXT NOT NULL
);
CREATE INDEX invoices_account ON invoices (account_id, number);

-- Optional billing details printed on invoices.
CREATE TABLE billing_details (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id),
  name TEXT,
  address TEXT,
  tax_id TEXT
);

-- Alerts: the low-balance threshold (µUSD; null: none) and which alert event types the account's webhook
-- endpoint receives (a JSON array; null: none, the endpoint gets only the payment events).
ALTER TABLE billing_details ADD COLUMN low_balance_micros BIGINT;
ALTER TABLE billing_details ADD COLUMN alert_events TEXT;

-- One row per alert sent, keyed by its crossing (a period end, a grant, an order): a second instance, a second
-- round or a restart finds the row and sends nothing. A low-balance row is deleted when the balance is back
-- above the threshold, so the next crossing alerts again.
CREATE TABLE billing_alerts (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  kind TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX billing_alerts_account ON billing_alerts (account_id);
