-- rwlock_write_handoff: hand a read-write lock's write side from one fresh
-- write hold to the next in one step (an in-process handoff between two
-- writers of one client; see internal/core/release.go): the release of the
-- first hold (rwlock_write_release_fresh) and the acquisition of a fresh
-- write hold for the next owner (rwlock_write_acquire_fresh), with no
-- PUBLISH in between, since nobody else may take the lock at that moment:
-- the hash stays in mode "write" and only the writer field changes.
--
-- Exactly once, without reading the clock, as lock_handoff. The release
-- deletes the first writer field, which serves that hold only, and marks
-- its request key "released", as rwlock_write_release_fresh does; the
-- acquisition happens only if that field was there. So a copy of this
-- request delivered at any later time finds the field gone and changes
-- nothing (a re-sent copy answers as the first did, from the mark and the
-- next owner's field). The next owner's request key is new to this
-- request; it is marked "cancelled" only by an undo of this handoff
-- (rwlock_write_release_fresh in undo mode, after a lost reply), before
-- which a copy that finds the first field frees the lock instead of
-- handing it on. The lock is freed instead, too, should fields other than
-- "mode" be left besides the first writer's (never so for a fresh hold,
-- whose owner never reads): handing the write side on over read holds
-- would break the lock.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  request: request key of the releasing hold: a prefix and then its writer
--          field
-- KEYS[3]  nextRequest: request key of the next owner's hold: a prefix and its writer
--          field
-- KEYS[4]  channel: lock channel (published only when the lock is freed instead)
-- KEYS[5]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[6]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  fieldAt int64: where the releasing owner's field starts in KEYS[2] (1-based)
-- ARGV[2]  nextFieldAt int64: where the next owner's field starts in KEYS[3] (1-based)
-- ARGV[3]  markUntil int64: when the releasing hold's mark expires, epoch ms by the server
--          clock (as rwlock_write_release_fresh's ARGV[4])
-- ARGV[4]  nextLeaseMillis int64: the next owner's lease in milliseconds
-- ARGV[5]  message string: message published when the lock is freed instead ("1")
-- ARGV[6]  publish string: publish command: "publish", or "spublish"
-- ARGV[7]  timeoutHead string: head of the timeout key prefixes (see ARGV[8])
-- ARGV[8]  timeoutTail string: tail of the timeout key prefixes (free_write)
-- ARGV[9]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[5] on KEYS[4] alone (prelude_wake's wait_freed)
-- ARGV[10] probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[11] client string: the Client's id (the next owner's too) when its waiters queue, else
--          "": a hand-over within a queued wait leaves the queue (prelude_wake's wait_took)
--
-- Returns {0, 1} when the write side was handed over (also for a re-sent
--         copy);
--         {0, 0} when it was released instead (the next owner's
--         acquisition had been undone): its waiters woken;
--         {-1, 0} when the releasing owner does not hold the write side:
--         nothing changed.
--
-- Reply    {remaining, acquired}
-- Code     NotHeld = -1: Remaining when the releasing owner does not hold the write side
-- Code     HandedOver = 1: Acquired when the next owner took the write side

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[6] or '') ~= '' and KEYS[4] and not redis.acl_check_cmd(ARGV[6], KEYS[4], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[6] .. ' to ' .. KEYS[4] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[6], ARGV[9])
if denied then
  return denied
end
local hash, from, to = KEYS[1], KEYS[2], KEYS[3]
local next_field = string.sub(to, ARGV[2] + 0)
if redis.call('hdel', hash, string.sub(from, ARGV[1] + 0)) == 0 then
  if redis.call('get', from) ~= 'released' then
    return {-1, 0}
  end
  redis.call('set', from, 'released', 'keepttl') -- a replay is a write (prelude_request's recorded)
  if redis.call('hexists', hash, next_field) == 0 then
    return {0, 0} -- a re-sent copy: the next hold ended since, or never began
  end
  return {0, 1}
end
redis.call('set', from, 'released', 'pxat', ARGV[3])
if redis.call('exists', to) == 1 or redis.call('hlen', hash) ~= 1 then
  free_write(hash, ARGV[7], ARGV[8])
  wait_freed(KEYS[5], KEYS[6], ARGV[9], ARGV[6], KEYS[4], ARGV[5], ARGV[10], '', 0, hash)
  return {0, 0}
end
redis.call('hset', hash, next_field, '1')
redis.call('pexpire', hash, ARGV[4])
if ARGV[11] ~= '' then
  wait_took(KEYS[5], KEYS[6], ARGV[11], next_field)
end
return {0, 1}
