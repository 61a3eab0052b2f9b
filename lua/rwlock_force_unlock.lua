-- rwlock_force_unlock: delete a read-write lock whoever holds it, in either
-- mode, with the timeout keys of all its read holds, and wake every waiter.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel (redisson_rwlock:{name})
-- ARGV[1], ARGV[2]  head and tail of timeout key prefixes: reader r's n-th
--          hold's key is ARGV[1] .. r .. ARGV[2] .. ':' .. n
-- ARGV[3]  message published when a lock was deleted ("1": wake all)
-- ARGV[4]  publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[5]  request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
--
-- Returns 1 when the lock existed, 0 otherwise.
refuse_late(ARGV[5])
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
  if f ~= 'mode' and string.sub(f, -6) ~= ':write' then
    local n = tonumber(redis.call('hget', KEYS[1], f)) or 0
    for i = 1, n do
      redis.call('del', ARGV[1] .. f .. ARGV[2] .. ':' .. i)
    end
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[3])
return 1
