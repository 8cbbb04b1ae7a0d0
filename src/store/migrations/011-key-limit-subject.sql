-- Whose rate-limit windows a key uses: null for its own (its id), else the id of the revoked key whose windows it
-- took over when it was created, so revoking and re-creating keys never brings fresh windows.
ALTER TABLE api_keys ADD COLUMN limit_subject TEXT;
-- The daily cap's count after a restart sums a subject's keys' usage: found through this index.
CREATE INDEX api_keys_limit_subject ON api_keys (limit_subject);
