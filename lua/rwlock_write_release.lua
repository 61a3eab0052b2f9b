-- rwlock_write_release: release one write hold of a read-write lock, or undo
-- a write acquisition whose reply never arrived. The owner's write count is
-- set to ARGV[8], the count the client has once the release took effect.
-- While write holds remain the TTL becomes the larger of what remains and
-- the lease. The last write hold's release publishes ARGV[4] ("1": wake
-- every waiter) and either deletes the hash or, when live read holds remain
-- (the owner's: a downgrade), switches mode to read with the TTL of the
-- longest of them. Retry-safe through the request key.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  channel: lock channel (redisson_rwlock:{name})
-- KEYS[3]  request: request key of this release
-- KEYS[4]  undoRequest: undo mode only: the request key of the acquisition to undo
-- KEYS[5]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[6]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  field string: the owner's write field "<owner>:write"
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  message string: message published when the write lock is released ("1")
-- ARGV[5]  undo bool: "1": undo mode (see rwlock_read_release.lua)
-- ARGV[6]  timeoutHead string: head of the timeout key prefixes (see ARGV[7])
-- ARGV[7]  timeoutTail string: tail of the timeout key prefixes: reader r's n-th
--          hold's key is ARGV[6] .. r .. ARGV[7] .. ':' .. n
-- ARGV[8]  count int64: the owner's write hold count once released
-- ARGV[9]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- ARGV[10] wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[4] on KEYS[2] alone (prelude_wake's wait_freed)
-- ARGV[11] probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[12] stay string: the releasing Client's id when its own callers still wait for the
--          write side (it joins the queue before the wake-up), else ""
-- ARGV[13] aliveMillis int64: how long a Client joining the queue counts as alive
-- Returns the owner's remaining write hold count (0: write lock released);
--         -1 when the owner does not hold the write lock (nothing changed);
--         -2 in undo mode when the acquisition never took place.
--
-- Reply    remaining
-- Code     NotHeld = -1: the owner does not hold the write lock
-- Code     NotTaken = -2: in undo mode, the acquisition never took place

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[9] or '') ~= '' and KEYS[2] and not redis.acl_check_cmd(ARGV[9], KEYS[2], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[9] .. ' to ' .. KEYS[2] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[9], ARGV[10], KEYS[5], ARGV[12])
if denied then
  return denied
end
local replay = release_replay(KEYS[3], KEYS[4], ARGV[5], ARGV[3])
if replay then
  return replay
end

local hash = KEYS[1]
if redis.call('hget', hash, 'mode') ~= 'write' or redis.call('hexists', hash, ARGV[2]) == 0 then
  -- recorded: a copy delivered later, once the same owner writes again,
  -- replays this instead of releasing that new hold
  record(KEYS[3], -1, ARGV[3])
  return -1
end
local count = ARGV[8] + 0
if count > 0 then
  redis.call('hset', hash, ARGV[2], count)
  if redis.call('pttl', hash) < (ARGV[1] + 0) then
    redis.call('pexpire', hash, ARGV[1])
  end
else
  redis.call('hdel', hash, ARGV[2])
  local longest = readers(hash, ARGV[6], ARGV[7])
  if longest > 0 then
    redis.call('hset', hash, 'mode', 'read')
    redis.call('pexpire', hash, longest)
  else
    redis.call('del', hash)
  end
  -- readers anywhere may get in; the first queued Client is woken too:
  -- when readers remain it finds them, a holder the queue did not record,
  -- and listens on KEYS[2] for their release
  wait_freed(KEYS[5], KEYS[6], ARGV[10], ARGV[9], KEYS[2], ARGV[4], ARGV[11], ARGV[12], ARGV[13], hash)
end
record(KEYS[3], count, ARGV[3])
return count
