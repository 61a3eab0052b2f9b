-- rwlock_write_release: release one write hold of a read-write lock, or undo
-- a write acquisition whose reply never arrived. While write holds remain
-- the TTL becomes the larger of what remains and the lease. The last write
-- hold's release publishes ARGV[4] ("1": wake every waiter) and either
-- deletes the hash or, when the owner still has live read holds (a
-- downgrade), switches mode to read with the TTL of the longest of them.
-- Retry-safe through the request key.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel (redisson_rwlock:{name})
-- KEYS[3]  request key of this release
-- KEYS[4]  undo mode only: the request key of the acquisition to undo
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the owner's write field "<owner>:write"
-- ARGV[3]  request record TTL in milliseconds
-- ARGV[4]  message published when the write lock is released ("1")
-- ARGV[5]  "1": undo mode (see rwlock_read_release.lua)
-- ARGV[6], ARGV[7]  head and tail of timeout key prefixes: reader r's n-th
--          hold's key is ARGV[6] .. r .. ARGV[7] .. ':' .. n
-- ARGV[8]  publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns the owner's remaining write hold count (0: write lock released);
--         -1 when the owner does not hold the write lock (nothing changed);
--         -2 in undo mode when the acquisition never took place.
local rec = redis.call('get', KEYS[3])
if rec then
  return tonumber(rec)
end
if ARGV[5] == '1' then
  local acq = redis.call('get', KEYS[4])
  if not acq then
    redis.call('set', KEYS[4], 'cancelled', 'px', ARGV[3])
    return -2
  end
  if acq == 'cancelled' then
    return -2
  end
  redis.call('set', KEYS[4], 'cancelled', 'px', ARGV[3])
end

local hash = KEYS[1]
if redis.call('hget', hash, 'mode') ~= 'write' or redis.call('hexists', hash, ARGV[2]) == 0 then
  return -1
end
local count = redis.call('hincrby', hash, ARGV[2], -1)
if count > 0 then
  if redis.call('pttl', hash) < tonumber(ARGV[1]) then
    redis.call('pexpire', hash, ARGV[1])
  end
else
  count = 0
  redis.call('hdel', hash, ARGV[2])
  local longest = 0
  for _, f in ipairs(redis.call('hkeys', hash)) do
    if f ~= 'mode' and string.sub(f, -6) ~= ':write' then
      local n = tonumber(redis.call('hget', hash, f)) or 0
      local alive = false
      for i = 1, n do
        local t = redis.call('pttl', ARGV[6] .. f .. ARGV[7] .. ':' .. i)
        if t > 0 then
          alive = true
          if t > longest then
            longest = t
          end
        end
      end
      if not alive then
        redis.call('hdel', hash, f)
      end
    end
  end
  if longest > 0 then
    redis.call('hset', hash, 'mode', 'read')
    redis.call('pexpire', hash, longest)
  else
    redis.call('del', hash)
  end
  redis.call(ARGV[8], KEYS[2], ARGV[4])
end
redis.call('set', KEYS[3], count, 'px', ARGV[3])
return count
