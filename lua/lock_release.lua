-- lock_release: release one hold of a reentrant lock, or undo an acquisition
-- whose reply never arrived. The owner's count is set to ARGV[6], the count
-- the client has once the release took effect. At 0 the hash is deleted and
-- the message ARGV[4] is published (nothing when it is empty: the spin
-- lock); above 0 the lease is set again. Retry-safe through the request key.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  channel: lock channel (redisson_lock__channel:{name})
-- KEYS[3]  request: request key of this release
-- KEYS[4]  undoRequest: undo mode only: the request key of the acquisition to undo
-- KEYS[5]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[6]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  leaseMillis int64: lease in milliseconds (re-set while holds remain)
-- ARGV[2]  field string: owner field
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  message string: message published when the lock is freed ("0"), or "" for none
-- ARGV[5]  undo bool: "1": undo mode. The release happens only if the acquisition
--          KEYS[4] took place; if it has not, it is marked cancelled so that a
--          late copy of it does nothing.
-- ARGV[6]  count int64: the owner's hold count once released (0: the lock is freed)
-- ARGV[7]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[8]  minHoldMillis int64: a minimum hold (rlock.WithMinHold) not yet over: the
--          milliseconds left of it; 0 when none. When it is above 0 and the release
--          frees the owner's hold (ARGV[6] is 0; not an undo), the owner's field is
--          kept, the lock expires when the minimum hold ends and ARGV[4] is published
--          as a release does: the waiter woken re-checks and finds the lock busy
--          until its expiry, when its re-check (the lock's PTTL) comes.
--          -1: the client holds nothing for the owner and clears what Redis may keep
--          of it, which may be the field a release within the minimum hold kept:
--          nothing is changed (a stale field expires with its lease).
-- ARGV[9]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[4] on KEYS[2] alone (prelude_wake's wait_freed)
-- ARGV[10] probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[11] stay string: the releasing Client's id when its own callers still wait for the
--          lock (it joins the queue before the wake-up), else ""
-- ARGV[12] aliveMillis int64: how long a Client joining the queue counts as alive
--
-- Returns the owner's remaining hold count (0: the lock was freed);
--         -1 when the owner does not hold the lock (nothing changed);
--         -2 in undo mode when the acquisition never took place.
--
-- Reply    remaining
-- Code     NotHeld = -1: the owner does not hold the lock
-- Code     NotTaken = -2: in undo mode, the acquisition never took place

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[7] or '') ~= '' and KEYS[2] and not redis.acl_check_cmd(ARGV[7], KEYS[2], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[7] .. ' to ' .. KEYS[2] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[7], ARGV[9], KEYS[5], ARGV[11])
if denied then
  return denied
end
if tonumber(ARGV[8]) < 0 then
  return -1
end
if ARGV[5] ~= '1' and ARGV[6] == '0' and tonumber(ARGV[8]) > 0 then
  local kept = keep_hold(KEYS[3], KEYS[4], ARGV[5], ARGV[3], KEYS[1], ARGV[2], ARGV[8])
  if kept then
    return kept
  end
  -- the waiter woken re-checks and waits for the expiry
  wait_freed(KEYS[5], KEYS[6], ARGV[9], ARGV[7], KEYS[2], ARGV[4], ARGV[10], ARGV[11], ARGV[12], KEYS[1])
  record(KEYS[3], 0, ARGV[3])
  return 0
end
local done, count = release_hold(KEYS[3], KEYS[4], ARGV[5], ARGV[3], KEYS[1], ARGV[2], ARGV[6], ARGV[1])
if done then
  return done
end
if count == 0 then
  wait_freed(KEYS[5], KEYS[6], ARGV[9], ARGV[7], KEYS[2], ARGV[4], ARGV[10], ARGV[11], ARGV[12], KEYS[1])
end
record(KEYS[3], count, ARGV[3])
return count
