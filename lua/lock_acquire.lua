-- lock_acquire: take a reentrant lock (Redisson RLock layout) for one owner.
-- The lock is a hash whose field <owner> holds the owner's hold count; the
-- hash's TTL is the lease. Retry-safe: the result is recorded under the
-- request key, and a re-sent request returns the record.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  request key of this acquisition
-- KEYS[3]  fencing counter (read only when ARGV[4] == "1")
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client id>:<token>"
-- ARGV[3]  request record TTL in milliseconds
-- ARGV[4]  "1" to take a fencing token (INCR of KEYS[3]), "0" not to
--
-- Returns {1, hold count, fencing token (0 without fencing)} when acquired;
--         {0, pttl} when another owner holds it (pttl -1: no expiry);
--         {0, -3} when this request was cancelled (lock_release undo) first.
local rec = redis.call('get', KEYS[2])
if rec then
  if rec == 'cancelled' then
    return {0, -3}
  end
  local count, token = string.match(rec, '^(%d+):(%d+)$')
  return {1, tonumber(count), tonumber(token)}
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  local token = 0
  if ARGV[4] == '1' then
    token = redis.call('incr', KEYS[3])
  end
  redis.call('set', KEYS[2], count .. ':' .. token, 'px', ARGV[3])
  return {1, count, token}
end
return {0, redis.call('pttl', KEYS[1])}
