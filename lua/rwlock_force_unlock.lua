-- rwlock_force_unlock: delete a read-write lock whoever holds it, in either
-- mode, with the timeout keys of all its read holds, and wake every waiter.
-- The request keys of the writer fields are marked "cancelled" first, so
-- that a copy of a fresh write hold's acquisition still in flight
-- (rwlock_write_acquire_fresh) does not take the lock again. The writer
-- fields of context owners and Redisson clients get a mark nobody reads,
-- which expires.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  channel: lock channel (redisson_rwlock:{name})
-- KEYS[3]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[4]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  timeoutHead string: head of the timeout key prefixes (see ARGV[2])
-- ARGV[2]  timeoutTail string: tail of the timeout key prefixes: reader r's n-th
--          hold's key is ARGV[1] .. r .. ARGV[2] .. ':' .. n
-- ARGV[3]  message string: message published when a lock was deleted ("1": wake all)
-- ARGV[4]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[5]  deadline int64: request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
-- ARGV[6]  requestPrefix string: prefix of the request keys of the lock's fresh write holds:
--          keys.Request(name, writer field) is ARGV[6] .. writer field
-- ARGV[7]  markTTLMillis int64: how long their marks live, in milliseconds: past the deadline of
--          any acquisition sent before now
-- ARGV[8]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[3] on KEYS[2] alone (prelude_wake's wait_freed)
-- ARGV[9]  probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
--
-- Returns 1 when the lock existed, 0 otherwise.
--
-- Reply    existed
-- Code     Existed = 1: the lock existed

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[4] or '') ~= '' and KEYS[2] and not redis.acl_check_cmd(ARGV[4], KEYS[2], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[4] .. ' to ' .. KEYS[2] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[4], ARGV[8])
if denied then
  return denied
end
refuse_late(ARGV[5])
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
lock_layout(KEYS[1], true) -- another hash is no read-write lock: left as it is
for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
  if string.sub(f, -6) == ':write' then
    redis.call('set', ARGV[6] .. f, 'cancelled', 'px', ARGV[7])
  elseif f ~= 'mode' then
    local n = tonumber(redis.call('hget', KEYS[1], f)) or 0
    for i = 1, n do
      redis.call('del', ARGV[1] .. f .. ARGV[2] .. ':' .. i)
    end
  end
end
redis.call('del', KEYS[1])
wait_freed(KEYS[3], KEYS[4], ARGV[8], ARGV[4], KEYS[2], ARGV[3], ARGV[9], '', 0, KEYS[1])
return 1
