-- lock_force_unlock: delete a lock whoever holds it and wake its waiters.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel
-- ARGV[1]  message published when a lock was deleted ("0")
-- ARGV[2]  publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[3]  request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
--
-- Returns 1 when the lock existed, 0 otherwise.
refuse_late(ARGV[3])
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
