-- rwlock_write_release_fresh: release a fresh write hold of a read-write
-- lock (rwlock_write_acquire_fresh), or undo the acquisition of one whose
-- reply never arrived. The writer field is deleted and the lock freed
-- (free_write: the hash is deleted, as only "mode" is left; were other
-- fields left, rwlock_write_release's rule applies), then ARGV[2] ("1":
-- wake every waiter) is published on the lock's channel, as
-- rwlock_write_release does. Then the hold's request key is marked until
-- the time in ARGV[4]: "released" after a release, "cancelled" after an undo.
--
-- Exactly once, without reading the clock, as lock_release_fresh. The mark
-- outlives the acquisition's deadline (ARGV[4] is at least a second past
-- it), so every copy of the acquisition delivered in time from then on
-- finds it and changes nothing, and later ones are refused by their
-- deadline. A copy of this request delivered at any later time changes
-- nothing either: the field it deletes serves this hold only, and it is
-- gone for good once the first copy ran (no acquisition can bring it back
-- past the mark), so the copy neither frees nor publishes. The "released"
-- mark also answers a re-sent release: it returns 0 as the first did
-- instead of "not held". An undo needs no answer: it is the same whether
-- it runs once or many times.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  request: request key of the hold (its acquisition's KEYS[2]): a prefix
--          and then the writer field
-- KEYS[3]  channel: lock channel (redisson_rwlock:{name})
-- KEYS[4]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[5]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  fieldAt int64: where the writer field starts in KEYS[2] (1-based)
-- ARGV[2]  message string: message published when the write hold ends ("1")
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[4]  markUntil int64: when the mark expires, epoch ms by the server clock: a second
--          past the later of the acquisition's deadline and this request's
-- ARGV[5]  undo bool: "1": undo mode
-- ARGV[6]  timeoutHead string: head of the timeout key prefixes (see ARGV[7])
-- ARGV[7]  timeoutTail string: tail of the timeout key prefixes: reader r's n-th
--          hold's key is ARGV[6] .. r .. ARGV[7] .. ':' .. n (used only
--          when fields other than "mode" are left)
-- ARGV[8]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[2] on KEYS[3] alone (prelude_wake's wait_freed)
-- ARGV[9]  probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[10] stay string: the releasing Client's id when its own callers still wait for the
--          write side (it joins the queue before the wake-up), else ""
-- ARGV[11] aliveMillis int64: how long a Client joining the queue counts as alive
--
-- Returns 0 when the hold was released (also for a re-sent release);
--         -1 when the owner does not hold the write side (its lease ran
--            out, or it was force-unlocked): nothing changed;
--         in undo mode, 0 when the acquisition had taken place (it is
--            released now) and -2 when it had not (it never will).
--
-- Reply    remaining
-- Code     NotHeld = -1: the owner does not hold the write side
-- Code     NotTaken = -2: in undo mode, the acquisition never took place

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[3], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[3], ARGV[8], KEYS[4], ARGV[10])
if denied then
  return denied
end
local hash, req = KEYS[1], KEYS[2]
local freed = redis.call('hdel', hash, string.sub(req, ARGV[1] + 0)) == 1
if freed then
  free_write(hash, ARGV[6], ARGV[7])
  wait_freed(KEYS[4], KEYS[5], ARGV[8], ARGV[3], KEYS[3], ARGV[2], ARGV[9], ARGV[10], ARGV[11], hash)
end
if ARGV[5] == '1' then
  redis.call('set', req, 'cancelled', 'pxat', ARGV[4])
  if freed then
    return 0
  end
  return -2
end
if freed then
  redis.call('set', req, 'released', 'pxat', ARGV[4])
  return 0
end
if redis.call('get', req) == 'released' then
  redis.call('set', req, 'released', 'keepttl') -- a replay is a write (prelude_request's recorded)
  return 0
end
return -1
