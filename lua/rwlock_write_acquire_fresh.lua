-- rwlock_write_acquire_fresh: take a fresh write hold of a read-write lock
-- (Redisson RReadWriteLock layout: the hash with "mode" = "write" and the
-- writer field "<owner>:write" = 1): the hold of an owner that holds the
-- write side once and never again, and never reads. A handle used without
-- a context owner is never reentrant, so the engine gives each of its
-- write acquisition attempts an owner of its own (a new token) and
-- releases that owner's hold (rwlock_write_release_fresh). Because the
-- writer field serves exactly one hold, no record is needed while it
-- lasts: the field itself says that the acquisition took place. Context
-- owners (reentrancy, downgrade, ErrUpgrade) use rwlock_write_acquire.
--
-- Exactly once, as lock_acquire_fresh. The request key KEYS[2] belongs to
-- this hold alone (keys.Request of the lock and the writer field); nothing
-- writes it until the hold ends. A copy of this request that finds neither
-- the lock nor that key reads the server's clock and is refused after the
-- deadline (REDISYNC_LATE), so only copies delivered in time can take the
-- lock, and the first of them does. Every later copy delivered in time
-- finds one of:
--   - the writer field: the hold lasts, and the copy answers "acquired"
--     again, changing nothing (a go-redis re-send of this request);
--   - the request key holding "released" or "cancelled": the hold was
--     released (rwlock_write_release_fresh, rwlock_write_handoff), its
--     acquisition undone, or the lock force-unlocked, each of which leaves
--     that mark until a second past the deadline; the copy changes nothing;
--   - the request key holding this script's own record "1": when the lease
--     is too short to outlive the deadline (a fixed lease), the hold could
--     expire before a late copy is refused, so the acquisition records
--     itself (one more command).
-- With a lease that outlives the deadline, the field lasts at least until
-- a second past it unless the hold is released, undone, handed on or
-- force-unlocked, which leave their mark; so no copy ever takes the lock
-- twice. (A lock deleted from outside redisync, such as with DEL or by a
-- Redisson client's forceUnlock, leaves no mark: a copy held up in the
-- network until then could take it again for the dead owner, until its
-- lease ends.)
--
-- The clock check and the record are prelude_request's refuse_late and
-- record written out (the same check, error and expiry): this is the
-- uncontended lock's path, and a prelude function costs a closure and a
-- call on every run (this script loads no prelude).
--
-- KEYS[1]  lock: lock hash (the lock's name)
-- KEYS[2]  request: request key of the hold: keys.Request(name, writer field), that
--          is a prefix and then the field
-- KEYS[3]  waiters?: the lock's queue of waiting Clients (prelude_wake); left out by an
--          attempt that does not wait in it (with KEYS[4] and ARGV[4], ARGV[5])
-- KEYS[4]  waitState?: the queue's state (prelude_wake); with KEYS[3]
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  fieldAt int64: where the writer field ("<client id>:<token>:write", fresh)
--          starts in KEYS[2] (1-based): the field is KEYS[2] from there on
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
--
-- Returns {1, 1} when acquired, also for a re-sent copy while the hold
--                lasts;
--         {0, pttl} when other owners hold the lock, in either mode (pttl
--                -1: no expiry);
--         {0, -3} when the hold was released, undone, handed on or
--                force-unlocked already (a late copy): nothing changed.
--
-- ARGV[4]  client? string: the Client's id when it waits, listening on its own channel (with
--          KEYS[3]): when the lock is busy, the Client joins the queue (or stays in it) for
--          ARGV[5] ms (prelude_wake's wait_join), and when it takes the write side, it
--          leaves the queue (wait_took)
-- ARGV[5]  aliveMillis? string: how long, in milliseconds (a decimal string), the Client counts as
--          alive in the queue from now; with ARGV[4]
-- Reply    {code, value, [foreign]}
-- Code     Acquired = 1: the hold was taken
-- Code     Busy = 0: Value is the PTTL, or Cancelled; Foreign (with ARGV[4]) is 1 when the Client
--          is the first in the queue behind a holder it did not record (prelude_wake's wait_join)
-- Code     Cancelled = -3: Value when the hold was released, undone, handed on or force-unlocked already
local hash, req = KEYS[1], KEYS[2]
local field = string.sub(req, ARGV[2] + 0)
if redis.call('exists', hash, req) == 0 then
  local t = redis.call('time')
  local left = ARGV[3] - (t[1] * 1000 + math.floor(t[2] / 1000))
  if left < 0 then
    error({err = 'REDISYNC_LATE request delivered after its deadline: not applied'})
  end
  redis.call('hset', hash, 'mode', 'write', field, '1')
  redis.call('pexpire', hash, ARGV[1])
  if ARGV[1] - 1000 < left then
    -- the lease may end before the deadline
    redis.call('set', req, '1', 'px', left + 1000)
  end
  if ARGV[4] then
    wait_took(KEYS[3], KEYS[4], ARGV[4], field) -- a waiter's attempt leaves the queue
  end
  return {1, 1}
end
local rec = redis.call('get', req)
if rec then
  redis.call('set', req, rec, 'keepttl') -- a replay is a write (prelude_request's recorded)
  if rec == '1' then
    return {1, 1}
  end
  return {0, -3}
end
if redis.call('hexists', hash, field) == 1 then
  redis.call('hincrby', hash, field, 0) -- a replay is a write (prelude_request's recorded)
  return {1, 1}
end
lock_layout(hash, true) -- busy only with a read-write lock
local pttl = redis.call('pttl', hash)
if ARGV[4] then
  return {0, pttl, wait_join(KEYS[3], KEYS[4], ARGV[4], ARGV[5], hash)}
end
return {0, pttl}
