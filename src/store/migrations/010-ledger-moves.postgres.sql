-- Every write that changes an account's spendable credit moves its ledger version, whoever writes it (PostgreSQL
-- only: SQLite has one process, which reads balances from the file itself and keeps no copy elsewhere).

-- A settlement moves the version itself, once, and applies its charge to the balances Redis keeps; it says so
-- with `SET LOCAL tollgate.settling = 'on'`, and the triggers leave it alone. Any other write (a grant, an
-- operator's change, a hold row, a release that does not say so) moves the version here and is listed in
-- ledger_moves, which every instance holding credit in Redis reads each second to forget balances it read
-- before the move.
CREATE TABLE ledger_moves (
  account_id TEXT PRIMARY KEY,
  version BIGINT NOT NULL,
  at BIGINT NOT NULL
);
CREATE INDEX ledger_moves_at ON ledger_moves (at);

-- The tables are named in the trigger's own schema, whatever the writer's search_path.
CREATE FUNCTION tollgate_grant_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I.accounts SET ledger_version = ledger_version + 1 WHERE id = $1', TG_TABLE_SCHEMA)
  USING CASE WHEN TG_OP = 'DELETE' THEN OLD.account_id ELSE NEW.account_id END;
  IF TG_OP = 'UPDATE' AND NEW.account_id <> OLD.account_id THEN
    EXECUTE format('UPDATE %I.accounts SET ledger_version = ledger_version + 1 WHERE id = $1', TG_TABLE_SCHEMA)
    USING OLD.account_id;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER credit_grants_ledger_moved
AFTER INSERT OR DELETE OR UPDATE OF remaining_micros, expires_at, account_id ON credit_grants
FOR EACH ROW WHEN (current_setting('tollgate.settling', true) IS DISTINCT FROM 'on')
EXECUTE FUNCTION tollgate_grant_moved();

CREATE FUNCTION tollgate_account_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.ledger_version = OLD.ledger_version THEN
    NEW.ledger_version := OLD.ledger_version + 1;
  END IF;
  EXECUTE format('INSERT INTO %I.ledger_moves (account_id, version, at) VALUES ($1, $2, $3)
    ON CONFLICT (account_id) DO UPDATE SET version = excluded.version, at = excluded.at', TG_TABLE_SCHEMA)
  USING NEW.id, NEW.ledger_version, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT);
  RETURN NEW;
END
$$;

CREATE TRIGGER accounts_ledger_moved
BEFORE UPDATE OF held_micros, debt_micros, credit_limit_micros, ledger_version ON accounts
FOR EACH ROW WHEN (current_setting('tollgate.settling', true) IS DISTINCT FROM 'on' AND (
  NEW.held_micros IS DISTINCT FROM OLD.held_micros OR NEW.debt_micros IS DISTINCT FROM OLD.debt_micros
  OR NEW.credit_limit_micros IS DISTINCT FROM OLD.credit_limit_micros
  OR NEW.ledger_version IS DISTINCT FROM OLD.ledger_version))
EXECUTE FUNCTION tollgate_account_moved();
