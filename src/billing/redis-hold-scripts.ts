/**
 * Credit holds in Redis: Lua run atomically, one round trip per hold. Per account, under one hash tag
 * (`{account id}`, so a script's keys live on one cluster slot):
 *
 * - `bal` hash: `bal` (spendable µUSD as of ledger version `ver`, read from PostgreSQL; absent = must be read
 *   again), `ver`, `until` (when a counted grant expires: the balance is read again then), `gen` (the Redis
 *   generation it was read in: only an instance that has seen that generation holds against it), `held` (sum
 *   of the live holds);
 * - `holds` hash: request id → JSON `{a: amount, i: owning instance, k: key id, e: expiry, s?: the finished
 *   request's settlement}`;
 * - `kspent` hash: per limited key, `d:<key>` the first day of its period and `s:<key>` its charged spend since
 *   then, valid with the balance's version;
 * - `kheld` hash: per key, what its live holds reserve.
 */

/** KEYS: bal, holds, kspent, kheld. ARGV: request id, amount, entry JSON, key id ('' none), key limit (-1 none),
 *  key period's first day, now, the Redis generation the caller last saw. Returns {1 held | 0 account short |
 *  -1 balance not known (or seeded in a generation the caller has not seen: it must put its holds back first) |
 *  -2 key short | -3 key spend not known, what the key's holds reserve}. */
export const HOLD_SCRIPT = `
local b = redis.call('HMGET', KEYS[1], 'bal', 'until', 'held', 'gen')
if not b[1] or tonumber(b[2]) <= tonumber(ARGV[7]) or b[4] ~= ARGV[8] then return {-1, 0} end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {1, 0} end
local amount = tonumber(ARGV[2])
local available = tonumber(b[1]) - tonumber(b[3] or '0')
if available < amount or available <= 0 then return {0, 0} end
local limit = tonumber(ARGV[5])
local keyHeld = 0
if ARGV[4] ~= '' then keyHeld = tonumber(redis.call('HGET', KEYS[4], ARGV[4]) or '0') end
if limit >= 0 then
  local k = redis.call('HMGET', KEYS[3], 'd:' .. ARGV[4], 's:' .. ARGV[4])
  if k[1] ~= ARGV[6] or not k[2] then return {-3, keyHeld} end
  if limit - tonumber(k[2]) - keyHeld < amount then return {-2, keyHeld} end
end
redis.call('HINCRBY', KEYS[1], 'held', amount)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
if ARGV[4] ~= '' then redis.call('HINCRBY', KEYS[4], ARGV[4], amount) end
return {1, keyHeld + amount}
`;

/** KEYS: bal, kspent. ARGV: ledger version, spendable, until, key id ('' none), key period's first day, key
 *  spend, the Redis generation the seeder checked. Writes a balance read from PostgreSQL unless Redis already
 *  has a newer version (then 0: read again). */
export const SEED_SCRIPT = `
local known = tonumber(redis.call('HGET', KEYS[1], 'ver') or '-1')
local version = tonumber(ARGV[1])
if version < known then return 0 end
if version > known then redis.call('DEL', KEYS[2]) end
redis.call('HSET', KEYS[1], 'ver', ARGV[1], 'bal', ARGV[2], 'until', ARGV[3], 'gen', ARGV[7])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'd:' .. ARGV[4], ARGV[5], 's:' .. ARGV[4], ARGV[6]) end
return 1
`;

/** The part every script that removes a hold shares: gives its amount back to the account and its key. */
const DROP_HOLD = `
local function dropHold(id, entry)
  local hold = cjson.decode(entry)
  redis.call('HINCRBY', KEYS[1], 'held', -hold.a)
  if hold.k ~= '' then redis.call('HINCRBY', KEYS[4], hold.k, -hold.a) end
  redis.call('HDEL', KEYS[2], id)
end
`;

/** KEYS: bal, holds, kspent, kheld. ARGV: new ledger version (-1: no such account), µUSD charged, replayed
 *  (1: the requests were charged by an earlier commit whose result was lost; the version is the one read after
 *  it), number of key charges n, then n × (key id, day, µUSD), then the settled request ids. Releases their
 *  holds; applies the charge to the balance when it is the version right after Redis's, else makes the balance
 *  unknown. A replayed settlement never applies: Redis's balance may predate the lost commit, so unless it is
 *  at least as new as the version read, it is made unknown (and a seed read before that version is refused). */
export const SETTLE_SCRIPT = `${DROP_HOLD}
local version = tonumber(ARGV[1])
local n = tonumber(ARGV[4])
for i = 5 + 3 * n, #ARGV do
  local entry = redis.call('HGET', KEYS[2], ARGV[i])
  if entry then dropHold(ARGV[i], entry) end
end
if version < 0 then return 1 end
local known = tonumber(redis.call('HGET', KEYS[1], 'ver') or '-1')
if ARGV[3] == '0' and known == version - 1 and redis.call('HEXISTS', KEYS[1], 'bal') == 1 then
  redis.call('HINCRBY', KEYS[1], 'bal', -tonumber(ARGV[2]))
  redis.call('HSET', KEYS[1], 'ver', version)
  for i = 0, n - 1 do
    local key, day, micros = ARGV[5 + 3 * i], ARGV[6 + 3 * i], ARGV[7 + 3 * i]
    local from = redis.call('HGET', KEYS[3], 'd:' .. key)
    if from and day >= from then redis.call('HINCRBY', KEYS[3], 's:' .. key, micros) end
  end
elseif known < version then
  redis.call('HSET', KEYS[1], 'ver', version)
  redis.call('HDEL', KEYS[1], 'bal')
  redis.call('DEL', KEYS[3])
end
return 1
`;

/** KEYS: bal, holds, kspent, kheld. ARGV: the instance, the instance that takes over finished holds ('' none).
 *  Releases the instance's holds; a finished one (its settlement journaled) goes to the new owner instead, and
 *  its settlement is returned to be charged. The balance becomes unknown (a settlement of the instance may have
 *  committed without reaching Redis). */
export const RELEASE_INSTANCE_SCRIPT = `${DROP_HOLD}
local all = redis.call('HGETALL', KEYS[2])
local finished = {}
for i = 1, #all, 2 do
  local hold = cjson.decode(all[i + 1])
  if hold.i == ARGV[1] then
    if hold.s and ARGV[2] ~= '' then
      hold.i = ARGV[2]
      redis.call('HSET', KEYS[2], all[i], cjson.encode(hold))
      table.insert(finished, hold.s)
    else
      dropHold(all[i], all[i + 1])
    end
  end
end
redis.call('HDEL', KEYS[1], 'bal')
return finished
`;

/** KEYS: bal, holds, kspent, kheld. ARGV: request id, its settlement JSON, its cost. Journals a finished request on
 *  its hold, and lowers the hold from the worst case to the cost (what its settlement will charge, at most): a
 *  settlement that waits (the database is away) keeps its charge reserved, not the request's worst case. */
export const FINISH_SCRIPT = `
local entry = redis.call('HGET', KEYS[2], ARGV[1])
if not entry then return 0 end
local hold = cjson.decode(entry)
hold.s = ARGV[2]
local cost = tonumber(ARGV[3])
if cost >= 0 and cost < hold.a then
  local freed = hold.a - cost
  redis.call('HINCRBY', KEYS[1], 'held', -freed)
  if hold.k ~= '' then redis.call('HINCRBY', KEYS[4], hold.k, -freed) end
  hold.a = cost
end
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(hold))
return 1
`;

/** KEYS: bal, holds, kspent, kheld. ARGV: request id, entry JSON, amount, key id. Puts back a hold Redis lost
 *  (restarted empty), whatever the balance: the request is already running. */
export const REASSERT_SCRIPT = `
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'held', ARGV[3])
if ARGV[4] ~= '' then redis.call('HINCRBY', KEYS[4], ARGV[4], ARGV[3]) end
return 1
`;
