-- fair_leave: take a waiter that gave up (its wait ran out, its context
-- ended, its client closed) out of a fair lock's queue and timeouts zset at
-- once, rather than after its deadline. The dead waiters at the head are
-- dropped too. When that changed the head while the lock is free, the new
-- head is told on its channel. Idempotent.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  queue: queue list (redisson_lock_queue:{name})
-- KEYS[3]  timeouts: timeouts zset (redisson_lock_timeout:{name})
-- KEYS[4]  channelPrefix: channel prefix (redisson_lock__channel:{name})
-- ARGV[1]  owner string: owner "<client id>:<token>"
-- ARGV[2]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
--
-- Returns 1 when the owner was in the queue, 0 otherwise.
--
-- Reply    left
-- Code     Left = 1: the owner was in the queue

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[2] or '') ~= '' and KEYS[4] and not redis.acl_check_cmd(ARGV[2], KEYS[4] .. ':', '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[2] .. ' to ' .. KEYS[4] .. ':' .. ': nothing was changed')
end
refuse_late(ARGV[3])
local head = redis.call('lindex', KEYS[2], '0')
local removed = redis.call('lrem', KEYS[2], 0, ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
local pruned = fair_prune(KEYS[2], KEYS[3], fair_now())
if (pruned or (removed > 0 and head == ARGV[1])) and redis.call('exists', KEYS[1]) == 0 then
  fair_notify(KEYS[2], KEYS[4], ARGV[2])
end
if removed > 0 then
  return 1
end
return 0
