/**
 * Lua run atomically inside Redis: one round trip per admission. Per subject: a sorted set of admitted
 * request ids by time (requests/min), a sorted set plus hash of token reservations and their running sum
 * (tokens/min), and a counter per UTC day. A window is kept only for a limit the key has. Keys share a
 * hash tag, so they live on one cluster slot.
 */

/** KEYS: requests zset, tokens zset, token values hash, token sum, day counter, day seeded marker.
 *  ARGV: now, window ms, rpm, tpm, daily (-1 = unlimited), tokens, request id, ms to UTC midnight, the day's
 *  tokens from the ledger (-1: not read; a daily cap whose day Redis does not hold then answers reason 4).
 *  Returns {allowed, reason (1 requests, 2 tokens, 3 daily, 4 day not seeded), retry ms, requests in window, tokens in window,
 *  time of the oldest request in the window, of the oldest token reservation (-1: none)}, counts after an
 *  admission, as they stand for a refusal. */
export const ADMIT_SCRIPT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local rpm = tonumber(ARGV[3])
local tpm = tonumber(ARGV[4])
local daily = tonumber(ARGV[5])
local tokens = tonumber(ARGV[6])
local id = ARGV[7]
local untilMidnight = tonumber(ARGV[8])
local seed = tonumber(ARGV[9])
local CHUNK = 1000
local horizon = now - window

-- When the oldest entry of a window was taken (-1 for an empty one): what x-ratelimit-reset-* reports.
local function oldestAt(key, limited)
  if not limited then return -1 end
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] then return tonumber(first[2]) end
  return -1
end

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', horizon)
-- Expired token reservations go in chunks: Lua's unpack takes at most ~8,000 values, and a backlog (a burst
-- of a minute ago) can be larger. Each entry is cleaned once, so the work stays one step per admission.
while true do
  local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', horizon, 'LIMIT', 0, CHUNK)
  if #expired == 0 then break end
  local values = redis.call('HMGET', KEYS[3], unpack(expired))
  local freed = 0
  for i = 1, #values do freed = freed + (tonumber(values[i]) or 0) end
  redis.call('HDEL', KEYS[3], unpack(expired))
  redis.call('ZREM', KEYS[2], unpack(expired))
  if freed ~= 0 then redis.call('DECRBY', KEYS[4], freed) end
  if #expired < CHUNK then break end
end

-- A daily cap counts only once Redis holds the day's count: after Redis lost it (a restart, a failover, an
-- eviction) the caller seeds it from the ledger's daily usage first, so that losing Redis cannot reopen a cap.
if daily >= 0 and redis.call('EXISTS', KEYS[6]) == 0 then
  if seed < 0 then return {0, 4, 0, 0, 0, -1, -1} end
  redis.call('SET', KEYS[5], seed, 'PX', untilMidnight + 3600000)
  redis.call('SET', KEYS[6], 1, 'PX', untilMidnight + 3600000)
end

local count = redis.call('ZCARD', KEYS[1])
local used = math.max(0, tonumber(redis.call('GET', KEYS[4]) or '0'))
local dayUsed = tonumber(redis.call('GET', KEYS[5]) or '0')

if rpm >= 0 and count + 1 > rpm then
  local index = math.max(0, count - rpm)
  local oldest = redis.call('ZRANGE', KEYS[1], index, index, 'WITHSCORES')
  local retry = window
  if oldest[2] then retry = tonumber(oldest[2]) + window - now end
  return {0, 1, math.max(1, retry), count, used, oldestAt(KEYS[1], true), oldestAt(KEYS[2], tpm >= 0)}
end
if tpm >= 0 and used + tokens > tpm then
  local retry = window
  if tokens <= tpm then
    local entries = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
    local sum = used
    for i = 1, #entries, 2 do
      sum = sum - (tonumber(redis.call('HGET', KEYS[3], entries[i])) or 0)
      if sum + tokens <= tpm then
        retry = tonumber(entries[i + 1]) + window - now
        break
      end
    end
  end
  return {0, 2, math.max(1, retry), count, used, oldestAt(KEYS[1], rpm >= 0), oldestAt(KEYS[2], true)}
end
if daily >= 0 and dayUsed + tokens > daily then
  return {0, 3, untilMidnight, count, used, oldestAt(KEYS[1], rpm >= 0), oldestAt(KEYS[2], tpm >= 0)}
end

-- An unlimited dimension records nothing: a busy unlimited key must not grow a set per request.
if rpm >= 0 then
  redis.call('ZADD', KEYS[1], now, id)
  redis.call('PEXPIRE', KEYS[1], window)
end
if tpm >= 0 then
  redis.call('ZADD', KEYS[2], now, id)
  redis.call('HSET', KEYS[3], id, tokens)
  redis.call('INCRBY', KEYS[4], tokens)
  for i = 2, 4 do redis.call('PEXPIRE', KEYS[i], window) end
end
redis.call('INCRBY', KEYS[5], tokens)
redis.call('PEXPIRE', KEYS[5], untilMidnight + 3600000)
return {1, 0, 0, count + 1, used + tokens, oldestAt(KEYS[1], rpm >= 0), oldestAt(KEYS[2], tpm >= 0)}
`;

/** KEYS: tokens zset, token values hash, token sum, day counter. ARGV: request id, reserved, actual, window ms.
 *  Replaces a reservation with the tokens actually used. */
export const RECONCILE_SCRIPT = `
local current = redis.call('HGET', KEYS[2], ARGV[1])
local actual = tonumber(ARGV[3])
if current then
  redis.call('HSET', KEYS[2], ARGV[1], actual)
  redis.call('INCRBY', KEYS[3], actual - tonumber(current))
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
end
local delta = actual - tonumber(ARGV[2])
if delta ~= 0 and redis.call('EXISTS', KEYS[4]) == 1 then redis.call('INCRBY', KEYS[4], delta) end
return 1
`;

/** KEYS: requests zset, tokens zset, token values hash, token sum, day counter. ARGV: request id, tokens.
 *  Gives back everything an admission took. */
export const RELEASE_SCRIPT = `
redis.call('ZREM', KEYS[1], ARGV[1])
local current = redis.call('HGET', KEYS[3], ARGV[1])
if current then
  redis.call('HDEL', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('DECRBY', KEYS[4], tonumber(current))
end
if redis.call('EXISTS', KEYS[5]) == 1 then redis.call('DECRBY', KEYS[5], tonumber(ARGV[2])) end
return 1
`;
