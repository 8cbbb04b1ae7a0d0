-- Instance leases (issue 20). Written in the SQL both SQLite and PostgreSQL accept.

-- Every instance on a shared database renews its lease while it runs (a heartbeat). A hold belongs to the
-- instance that took it: once that instance's lease has run out (it died, or lost the database for longer
-- than the lease), any instance releases its holds, instead of the hold's own one-hour expiry.
CREATE TABLE instance_leases (
  instance_id TEXT PRIMARY KEY,
  heartbeat_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);

-- NULL: a hold taken before leases existed, or by a store without them; its own expiry releases it.
ALTER TABLE holds ADD COLUMN instance_id TEXT;
CREATE INDEX holds_instance ON holds (instance_id);
