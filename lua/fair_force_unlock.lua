-- fair_force_unlock: delete a fair lock whoever holds it, drop the dead
-- waiters at the head of its queue, and publish "0" on the channel of the
-- owner then at the head (if any), so that it takes the lock at once. The
-- head is told even when the lock did not exist (say, deleted from outside).
-- The request keys of fresh holds (a Lock of the same name) are marked
-- first, as lock_force_unlock does (cancel_holds). A lock key of another
-- type than a hash is refused (REDISYNC_WRONGTYPE, from lock_exists), and
-- so is a queue of another type, or a timeouts key of another type when
-- the queue has a head (WRONGTYPE at fair_prune's first read of them),
-- before anything is written.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  queue: queue list (redisson_lock_queue:{name})
-- KEYS[3]  timeouts: timeouts zset (redisson_lock_timeout:{name})
-- KEYS[4]  channelPrefix: channel prefix (redisson_lock__channel:{name})
-- ARGV[1]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
-- ARGV[3]  requestPrefix string: prefix of the request keys of fresh holds (lock_force_unlock's
--          ARGV[4])
-- ARGV[4]  markTTLMillis int64: how long their marks live, in milliseconds (lock_force_unlock's
--          ARGV[5])
--
-- Returns 1 when the lock existed, 0 otherwise.
--         An error reply (REDISYNC_WRONGTYPE, WRONGTYPE) when a key holds
--         another type than the fair lock's layout: nothing changed.
--
-- Reply    existed
-- Code     Existed = 1: the lock existed

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[1] or '') ~= '' and KEYS[4] and not redis.acl_check_cmd(ARGV[1], KEYS[4] .. ':', '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[1] .. ' to ' .. KEYS[4] .. ':' .. ': nothing was changed')
end
refuse_late(ARGV[2])
local existed = lock_exists(KEYS[1])
-- the dead waiters go first: fair_prune reads the queue (and the head's
-- deadline) before it writes, so a queue of another type fails here
fair_prune(KEYS[2], KEYS[3], fair_now())
if existed then
  cancel_holds(KEYS[1], ARGV[3], ARGV[4])
  redis.call('del', KEYS[1])
end
fair_notify(KEYS[2], KEYS[4], ARGV[1])
if existed then
  return 1
end
return 0
