-- rwlock_read_acquire: take one read hold of a read-write lock (Redisson
-- RReadWriteLock layout) for one owner. The lock is a hash: field "mode" is
-- "read" or "write", a reader's field <owner> holds its read hold count, the
-- writer's field <owner>:write its write hold count. Each read hold n also
-- has a string key <timeout prefix>:n with its own PEXPIRE = lease, and the
-- hash's TTL is at least the longest of them. A read hold is granted when
-- the lock is free, read-locked, or write-locked by this same owner
-- (downgrade). Retry-safe: the result is recorded under the request key,
-- and a re-sent request returns the record.
--
-- A reader field none of whose timeout keys is alive belongs to holds that
-- expired while other readers kept the hash alive: it counts from zero again.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  request key of this acquisition
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client id>:<token>"
-- ARGV[3]  request record TTL in milliseconds
-- ARGV[4]  the owner's write field "<owner>:write"
-- ARGV[5]  the owner's timeout key prefix ({name}:<owner>:rwlock_timeout);
--          hold n's key is ARGV[5] .. ':' .. n
--
-- Returns {1, read hold count} when acquired;
--         {0, pttl} when another owner holds the write lock, or the key is
--                   not a read-write lock (pttl -1: no expiry);
--         {0, -3} when this request was cancelled (undo) first.
local rec = redis.call('get', KEYS[2])
if rec then
  if rec == 'cancelled' then
    return {0, -3}
  end
  return {1, tonumber(rec)}
end
local lease = tonumber(ARGV[1])
local count
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], 'mode', 'read')
  count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', ARGV[5] .. ':' .. count, '1', 'px', lease)
  redis.call('pexpire', KEYS[1], lease)
else
  local mode = redis.call('hget', KEYS[1], 'mode')
  if not (mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[4]) == 1)) then
    return {0, redis.call('pttl', KEYS[1])}
  end
  local v = redis.call('hget', KEYS[1], ARGV[2])
  if v then
    local alive = false
    for i = 1, tonumber(v) do
      if redis.call('pttl', ARGV[5] .. ':' .. i) > 0 then
        alive = true
        break
      end
    end
    if not alive then
      redis.call('hdel', KEYS[1], ARGV[2])
    end
  end
  count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', ARGV[5] .. ':' .. count, '1', 'px', lease)
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
end
redis.call('set', KEYS[2], count, 'px', ARGV[3])
return {1, count}
