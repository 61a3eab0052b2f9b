-- lock_release: release one hold of a reentrant lock, or undo an acquisition
-- whose reply never arrived. At hold count 0 the hash is deleted and ARGV[4]
-- is published; above 0 the lease is set again. Retry-safe through the
-- request key.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel (redisson_lock__channel:{name})
-- KEYS[3]  request key of this release
-- KEYS[4]  undo mode only: the request key of the acquisition to undo
-- ARGV[1]  lease in milliseconds (re-set while holds remain)
-- ARGV[2]  owner field
-- ARGV[3]  request record TTL in milliseconds
-- ARGV[4]  message published when the lock is freed ("0")
-- ARGV[5]  "1": undo mode. The release happens only if the acquisition
--          KEYS[4] took place; if it has not, it is marked cancelled so that a
--          late copy of it does nothing.
-- ARGV[6]  publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns the owner's remaining hold count (0: the lock was freed);
--         -1 when the owner does not hold the lock (nothing changed);
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
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if count > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
else
  count = 0
  redis.call('del', KEYS[1])
  redis.call(ARGV[6], KEYS[2], ARGV[4])
end
redis.call('set', KEYS[3], count, 'px', ARGV[3])
return count
