-- lock_handoff: hand a lock from one fresh hold to the next in one step (an
-- in-process handoff between two callers of one client; see
-- internal/core/release.go): the release of the first hold
-- (lock_release_fresh) and the acquisition of a fresh hold for the next
-- owner (lock_acquire_fresh), with no PUBLISH in between, since nobody else
-- may take the lock at that moment.
--
-- Exactly once, without reading the clock (a fenced handoff reads it for
-- the token's floor only, see prelude_lock's next_token). The release deletes the first
-- owner's field, which serves that hold only, and marks its request key
-- "released", as lock_release_fresh does; the acquisition happens only if
-- that field was there. So a copy of this request delivered at any later
-- time finds the field gone and changes nothing (a re-sent copy answers as
-- the first did, from the mark and the next owner's field). The next
-- owner's request key is new to this request; it is marked "cancelled"
-- only by an undo of this handoff (lock_release_fresh in undo mode, after
-- a lost reply), before which a copy that finds the first field frees the
-- lock instead of handing it on.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  request: request key of the releasing hold: a prefix and then its field
-- KEYS[3]  nextRequest: request key of the next owner's hold: a prefix and its field
-- KEYS[4]  channel: lock channel (published only when the lock is freed instead)
-- KEYS[5]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[6]  waitState: the queue's state (prelude_wake)
-- KEYS[7]  counter?: fencing counter (only when ARGV[6] == "1"; may be left out
--          otherwise)
-- ARGV[1]  fieldAt int64: where the releasing owner's field starts in KEYS[2] (1-based)
-- ARGV[2]  nextFieldAt int64: where the next owner's field starts in KEYS[3] (1-based)
-- ARGV[3]  markUntil int64: when the releasing hold's mark expires, epoch ms by the server
--          clock (as lock_release_fresh's ARGV[4])
-- ARGV[4]  nextLeaseMillis int64: the next owner's lease in milliseconds
-- ARGV[5]  message string: message published when the lock is freed instead ("" for none)
-- ARGV[6]  fenced bool: "1" to take a fencing token for the next owner, "0" not to
-- ARGV[7]  publish string: publish command: "publish", or "spublish"
-- ARGV[8]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[5] on KEYS[4] alone (prelude_wake's wait_freed)
-- ARGV[9]  probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[10] client string: the Client's id: the next owner's hold is recorded as the
--          holder in the queue's state when Clients wait (prelude_wake's wait_took)
--
-- Returns {0, 1, fencing token (0 without fencing)} when the lock was
--         handed over (also for a re-sent copy);
--         {0, 0, 0} when the next owner's acquisition had been undone: the
--         lock was released instead, and its waiters woken;
--         {-1, 0, 0} when the releasing owner does not hold the lock:
--         nothing changed.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE) when the lock is
--         fenced and its counter KEYS[7] holds another type than an integer
--         string: checked first, so nothing changed.
--
-- Reply    {remaining, acquired, fence}
-- Code     NotHeld = -1: Remaining when the releasing owner does not hold the lock
-- Code     HandedOver = 1: Acquired when the next owner took the lock

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[7] or '') ~= '' and KEYS[4] and not redis.acl_check_cmd(ARGV[7], KEYS[4], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[7] .. ' to ' .. KEYS[4] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[7], ARGV[8])
if denied then
  return denied
end
local hash, from, to = KEYS[1], KEYS[2], KEYS[3]
local next_field = string.sub(to, ARGV[2] + 0)
if ARGV[6] == '1' then
  -- the counter is read before the release writes: one of another type
  -- (WRONGTYPE at the GET) or a string that INCR would refuse fails here,
  -- with nothing changed (prelude_types' number_at, written out: this
  -- script loads no prelude)
  local v = redis.call('get', KEYS[7])
  if v and not string.match(v, '^%-?%d+$') then
    error({err = 'REDISYNC_WRONGTYPE key ' .. KEYS[7] .. ' holds a string that is not an integer'})
  end
end
if redis.call('hdel', hash, string.sub(from, ARGV[1] + 0)) == 0 then
  if redis.call('get', from) ~= 'released' then
    return {-1, 0, 0}
  end
  redis.call('set', from, 'released', 'keepttl') -- a replay is a write (prelude_request's recorded)
  if redis.call('hexists', hash, next_field) == 0 then
    return {0, 0, 0} -- a re-sent copy: the next hold ended since, or never began
  end
  local token = 0
  if ARGV[6] == '1' then
    token = tonumber(redis.call('get', KEYS[7])) or 0
  end
  return {0, 1, token}
end
redis.call('set', from, 'released', 'pxat', ARGV[3])
if redis.call('exists', to) == 1 then
  wait_freed(KEYS[5], KEYS[6], ARGV[8], ARGV[7], KEYS[4], ARGV[5], ARGV[9], '', 0, hash)
  return {0, 0, 0}
end
redis.call('hset', hash, next_field, '1')
redis.call('pexpire', hash, ARGV[4])
local token = 0
if ARGV[6] == '1' then
  -- raised to the server's clock in microseconds (prelude_lock's
  -- next_token, written out: the only clock this script reads)
  token = redis.call('incr', KEYS[7])
  local t = redis.call('time')
  local floor = t[1] * 1000000 + t[2]
  if token < floor then
    redis.call('set', KEYS[7], string.format('%d', floor))
    token = floor
  end
end
if ARGV[10] ~= '' then
  wait_took(KEYS[5], KEYS[6], ARGV[10], next_field)
end
return {0, 1, token}
