-- The version contract between instances on one database. Written in the SQL both SQLite and PostgreSQL accept.

-- Every instance's lease says which release it runs, the newest migration it knows (the schema it needs), the
-- oldest release it can run beside, and what it can read (stored formats, by name; a JSON array). A lease
-- without a release was written by a release from before the contract.
ALTER TABLE instance_leases ADD COLUMN release_version TEXT;
ALTER TABLE instance_leases ADD COLUMN schema_version TEXT;
ALTER TABLE instance_leases ADD COLUMN oldest_peer TEXT;
ALTER TABLE instance_leases ADD COLUMN reads TEXT;
