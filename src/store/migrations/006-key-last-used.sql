-- When each key was last used: the newest usage record of the key, found through this index (the keys list
-- reads it; nothing is written per request beyond the usage record itself).
CREATE INDEX usage_records_key ON usage_records (key_id, created_at);
