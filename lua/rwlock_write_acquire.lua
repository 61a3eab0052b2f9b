-- rwlock_write_acquire: take one write hold of a read-write lock (Redisson
-- RReadWriteLock layout; see rwlock_read_acquire.lua) for one owner. Granted
-- when the lock is free, or write-locked by this owner (reentrant: the TTL
-- becomes the larger of what remains and the lease). An owner that holds
-- live read holds but not the write lock is refused at once (upgrade).
-- Retry-safe through the request key.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  request key of this acquisition
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the owner's reader field "<client id>:<token>"
-- ARGV[3]  request record TTL in milliseconds
-- ARGV[4]  the owner's write field "<owner>:write"
-- ARGV[5]  the owner's timeout key prefix ({name}:<owner>:rwlock_timeout)
--
-- Returns {1, write hold count} when acquired;
--         {0, pttl} when other owners hold it (pttl -1: no expiry);
--         {0, -3} when this request was cancelled (undo) first;
--         {-1, 0} when the owner holds only read holds (nothing changed).
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
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[4], 1)
  redis.call('pexpire', KEYS[1], lease)
  count = 1
elseif redis.call('hget', KEYS[1], 'mode') == 'write' and redis.call('hexists', KEYS[1], ARGV[4]) == 1 then
  count = redis.call('hincrby', KEYS[1], ARGV[4], 1)
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
else
  local v = redis.call('hget', KEYS[1], ARGV[2])
  if v then
    for i = 1, tonumber(v) do
      if redis.call('pttl', ARGV[5] .. ':' .. i) > 0 then
        return {-1, 0}
      end
    end
  end
  return {0, redis.call('pttl', KEYS[1])}
end
redis.call('set', KEYS[2], count, 'px', ARGV[3])
return {1, count}
