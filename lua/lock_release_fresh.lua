-- lock_release_fresh: release a fresh hold (lock_acquire_fresh), or undo
-- the acquisition of one whose reply never arrived. The owner's field is
-- deleted, which frees the lock (the field was the exclusive lock's only
-- one), and ARGV[2] is published (nothing when ARGV[2] is empty: the spin
-- lock). Then the hold's request key is marked, until ARGV[4]: "released"
-- after a release, "cancelled" after an undo.
--
-- Exactly once, without reading the clock. The mark outlives the
-- acquisition's deadline (ARGV[4] is at least a second past it), so every
-- copy of the acquisition delivered in time from then on finds it and
-- changes nothing, and later ones are refused by their deadline. A copy of
-- this request delivered at any later time changes nothing either: the
-- field it deletes serves this hold only, and it is gone for good once
-- the first copy ran (no acquisition can bring it back past the mark). The
-- "released" mark also answers a re-sent release: it returns 0 as the
-- first did instead of "not held". An undo needs no answer: it is the
-- same whether it runs once or many times.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  request: request key of the hold (its acquisition's KEYS[2]): a prefix
--          and then the owner field
-- KEYS[3]  channel: lock channel (redisson_lock__channel:{name})
-- KEYS[4]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[5]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  fieldAt int64: where the owner field starts in KEYS[2] (1-based)
-- ARGV[2]  message string: message published when the lock is freed ("0"), or "" for none
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[4]  markUntil int64: when the mark expires, epoch ms by the server clock: a second
--          past the later of the acquisition's deadline and this request's
-- ARGV[5]  undo bool: "1": undo mode
-- ARGV[6]  minHoldMillis int64: a minimum hold (rlock.WithMinHold) not yet over: the
--          milliseconds left of it; 0 when none. Above 0 a release (not an undo) keeps
--          the owner's field with the count 0 (which no renewal extends), sets the lock
--          to expire when the minimum hold ends and
--          publishes as a release does: the waiter woken re-checks and finds the lock
--          busy until its expiry, when its re-check (the lock's PTTL) comes.
--          The mark then lives at least as long, so a copy of the release finds it and
--          does not push the expiry back.
-- ARGV[7]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[2] on KEYS[3] alone (prelude_wake's wait_freed)
-- ARGV[8]  probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[9]  stay string: the releasing Client's id when its own callers still wait for the
--          lock (it joins the queue before the wake-up), else ""
-- ARGV[10] aliveMillis int64: how long a Client joining the queue counts as alive
--
-- Returns 0 when the hold was released (also for a re-sent release);
--         -1 when the owner does not hold the lock (its lease ran out, or
--            it was force-unlocked): nothing changed;
--         in undo mode, 0 when the acquisition had taken place (it is
--            released now) and -2 when it had not (it never will).
--
-- Reply    remaining
-- Code     NotHeld = -1: the owner does not hold the lock
-- Code     NotTaken = -2: in undo mode, the acquisition never took place

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[3], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[3], ARGV[7], KEYS[4], ARGV[9])
if denied then
  return denied
end
local field = string.sub(KEYS[2], ARGV[1] + 0)
if ARGV[5] ~= '1' and tonumber(ARGV[6]) > 0 and redis.call('hexists', KEYS[1], field) == 1 then
  if redis.call('get', KEYS[2]) ~= 'released' then
    -- count 0: the hold is over, the field only keeps the lock until the
    -- minimum hold ends; a renewal sent before this release and run after
    -- it leaves such a field alone (renew_lock)
    redis.call('hset', KEYS[1], field, 0)
    redis.call('pexpire', KEYS[1], ARGV[6])
    -- the waiter woken re-checks and waits for the expiry
    wait_freed(KEYS[4], KEYS[5], ARGV[7], ARGV[3], KEYS[3], ARGV[2], ARGV[8], ARGV[9], ARGV[10], KEYS[1])
    redis.call('set', KEYS[2], 'released', 'pxat', ARGV[4])
    if redis.call('pttl', KEYS[2]) < tonumber(ARGV[6]) then
      redis.call('pexpire', KEYS[2], ARGV[6])
    end
  end
  return 0
end
local freed = redis.call('hdel', KEYS[1], field) == 1
if freed then
  wait_freed(KEYS[4], KEYS[5], ARGV[7], ARGV[3], KEYS[3], ARGV[2], ARGV[8], ARGV[9], ARGV[10], KEYS[1])
end
if ARGV[5] == '1' then
  redis.call('set', KEYS[2], 'cancelled', 'pxat', ARGV[4])
  if freed then
    return 0
  end
  return -2
end
if freed then
  redis.call('set', KEYS[2], 'released', 'pxat', ARGV[4])
  return 0
end
if redis.call('get', KEYS[2]) == 'released' then
  redis.call('set', KEYS[2], 'released', 'keepttl') -- a replay is a write (prelude_request's recorded)
  return 0
end
return -1
