-- fair_release: release one hold of a fair lock, or undo an acquisition
-- whose reply never arrived. The owner's count is set to ARGV[5], the count
-- the client has once the release took effect; above 0 the lease is set
-- again. At 0 the hash is deleted, the dead waiters at the head of the queue
-- are dropped, and "0" is published on the channel of the owner then at the
-- head (only that one; nothing when the queue is empty). Retry-safe through
-- the request key. (lock_release is not reused: whom to wake is decided
-- inside the script, from the queue.)
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  queue: queue list (redisson_lock_queue:{name})
-- KEYS[3]  timeouts: timeouts zset (redisson_lock_timeout:{name})
-- KEYS[4]  channelPrefix: channel prefix (redisson_lock__channel:{name})
-- KEYS[5]  request: request key of this release
-- KEYS[6]  undoRequest: undo mode only: the request key of the acquisition to undo
-- ARGV[1]  leaseMillis int64: lease in milliseconds (re-set while holds remain)
-- ARGV[2]  field string: owner field
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  undo bool: "1": undo mode. The release happens only if the acquisition
--          KEYS[6] took place; if it has not, it is marked cancelled so that
--          a late copy of it does nothing.
-- ARGV[5]  count int64: the owner's hold count once released (0: the lock is freed)
-- ARGV[6]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[7]  minHoldMillis int64: a minimum hold (rlock.WithMinHold) not yet over: the
--          milliseconds left of it; 0 when none. When it is above 0 and the release
--          frees the owner's hold (ARGV[5] is 0; not an undo), the owner's field is
--          kept, the lock expires when the minimum hold ends, and the head of the
--          queue is woken as by a release: it re-checks and finds the lock busy
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
if redis.acl_check_cmd and (ARGV[6] or '') ~= '' and KEYS[4] and not redis.acl_check_cmd(ARGV[6], KEYS[4] .. ':', '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[6] .. ' to ' .. KEYS[4] .. ':' .. ': nothing was changed')
end
if tonumber(ARGV[7]) < 0 then
  return -1
end
if ARGV[4] ~= '1' and ARGV[5] == '0' and tonumber(ARGV[7]) > 0 then
  local kept = keep_hold(KEYS[5], KEYS[6], ARGV[4], ARGV[3], KEYS[1], ARGV[2], ARGV[7])
  if kept then
    return kept
  end
  fair_notify(KEYS[2], KEYS[4], ARGV[6]) -- the head re-checks and waits for the expiry
  record(KEYS[5], 0, ARGV[3])
  return 0
end
local done, count = release_hold(KEYS[5], KEYS[6], ARGV[4], ARGV[3], KEYS[1], ARGV[2], ARGV[5], ARGV[1])
if done then
  return done
end
if count == 0 then
  fair_prune(KEYS[2], KEYS[3], fair_now())
  fair_notify(KEYS[2], KEYS[4], ARGV[6])
end
record(KEYS[5], count, ARGV[3])
return count
