-- lock_force_unlock: delete a lock whoever holds it and wake its waiters
-- (as a release does: the first Client of its queue, prelude_wake).
-- The request keys of fresh holds are marked first (cancel_holds), so that
-- a copy of their acquisition still in flight does not take the lock again.
-- A key of another type than a hash is no lock: it is refused
-- (REDISYNC_WRONGTYPE, from lock_exists) and left as it is.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  channel: lock channel
-- KEYS[3]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[4]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  message string: message published when a lock was deleted ("0")
-- ARGV[2]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
-- ARGV[4]  requestPrefix string: prefix of the request keys of the lock's fresh holds:
--          keys.Request(name, owner field) is ARGV[4] .. owner field
-- ARGV[5]  markTTLMillis int64: how long their marks live, in milliseconds: past the deadline of
--          any acquisition sent before now
-- ARGV[6]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[1] on KEYS[2] alone (prelude_wake's wait_freed)
-- ARGV[7]  probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
--
-- Returns 1 when the lock existed, 0 otherwise.
--         An error reply (REDISYNC_WRONGTYPE) when KEYS[1] holds another
--         type than a hash: nothing changed.
--
-- Reply    existed
-- Code     Existed = 1: the lock existed

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[2] or '') ~= '' and KEYS[2] and not redis.acl_check_cmd(ARGV[2], KEYS[2], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[2] .. ' to ' .. KEYS[2] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[2], ARGV[6])
if denied then
  return denied
end
refuse_late(ARGV[3])
if not lock_exists(KEYS[1]) then
  return 0
end
cancel_holds(KEYS[1], ARGV[4], ARGV[5])
redis.call('del', KEYS[1])
wait_freed(KEYS[3], KEYS[4], ARGV[6], ARGV[2], KEYS[2], ARGV[1], ARGV[7], '', 0, KEYS[1])
return 1
