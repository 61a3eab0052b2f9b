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
if tonumber(ARGV[8]) < 0 then
  return -1
end
if ARGV[5] ~= '1' and ARGV[6] == '0' and tonumber(ARGV[8]) > 0 then
  local kept = keep_hold(KEYS[3], KEYS[4], ARGV[5], ARGV[3], KEYS[1], ARGV[2], ARGV[8])
  if kept then
    return kept
  end
  if ARGV[4] ~= '' then
    redis.call(ARGV[7], KEYS[2], ARGV[4]) -- waiters re-check and wait for the expiry
  end
  record(KEYS[3], 0, ARGV[3])
  return 0
end
local done, count = release_hold(KEYS[3], KEYS[4], ARGV[5], ARGV[3], KEYS[1], ARGV[2], ARGV[6], ARGV[1])
if done then
  return done
end
if count == 0 and ARGV[4] ~= '' then
  redis.call(ARGV[7], KEYS[2], ARGV[4])
end
record(KEYS[3], count, ARGV[3])
return count
