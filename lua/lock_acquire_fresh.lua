-- lock_acquire_fresh: take a fresh hold of a lock (Redisson RLock layout):
-- the hold of an owner that holds the lock once and never again. A handle
-- used without a context owner is never reentrant, so the engine gives
-- each of its acquisition attempts an owner of its own (a new token, the
-- field "<client id>:<token>") and releases that owner's hold. Because
-- the field serves exactly one hold, no record is needed while it lasts:
-- the field itself says that the acquisition took place. Used by the lock
-- and the spin lock; the reentrant (context owner) holds use lock_acquire.
--
-- Exactly once. The request key KEYS[2] belongs to this hold alone
-- (keys.Request of the lock and the owner field); nothing writes it until
-- the hold ends. A copy of this request that finds neither the lock nor
-- that key reads the server's clock and is refused after the deadline
-- (REDISYNC_LATE), so only copies delivered in time can take the lock, and
-- the first of them does. Every later copy delivered in time finds one of:
--   - the owner's field: the hold lasts, and the copy answers "acquired"
--     again, changing nothing (a go-redis re-send of this request);
--   - the request key holding "released" or "cancelled": the hold was
--     released (lock_release_fresh), its acquisition undone, or the lock
--     force-unlocked, each of which leaves that mark until a second past
--     the deadline; the copy changes nothing;
--   - the request key holding this script's own record "1:<token>": when
--     the lease is too short to outlive the deadline (a fixed lease), the
--     hold could expire before a late copy is refused, so the acquisition
--     records itself as lock_acquire does (one more command).
-- With a lease that outlives the deadline, the field lasts at least until
-- a second past it unless the hold is released, undone or force-unlocked,
-- which leave their mark; so no copy ever takes the lock twice. (A lock
-- deleted from outside redisync, such as with DEL or by a Redisson client's
-- forceUnlock, leaves no mark: a copy held up in the network until then
-- could take it again for the dead owner, until its lease ends.)
--
-- The clock check and the record are prelude_request's refuse_late and
-- record written out (the same check, error and expiry): this is the
-- uncontended lock's path, and a prelude function costs a closure and a
-- call on every run (this script loads none of prelude_request; of
-- prelude_wake, only the queue's functions, which a first attempt does not
-- call).
--
-- KEYS[1]  lock: lock hash (the lock's name)
-- KEYS[2]  request: request key of the hold: keys.Request(name, owner field), that
--          is a prefix and then the field
-- KEYS[3]  counter?: fencing counter (only when ARGV[4] == "1"; may be left out
--          otherwise, unless the queue's keys follow)
-- KEYS[4]  waiters?: the lock's queue of waiting Clients (prelude_wake); left out by an
--          attempt that does not wait in the queue (a first attempt, the spin lock's)
-- KEYS[5]  waitState?: the queue's state: when each waiting Client counts as alive, and the
--          holder recorded (prelude_wake); with KEYS[4]
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  fieldAt int64: where the owner field ("<client id>:<token>", fresh) starts in
--          KEYS[2] (1-based): the field is KEYS[2] from there on
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  fenced bool: "1" to take a fencing token (INCR of KEYS[3], raised to the
--          server's clock in microseconds: prelude_lock's next_token), "0" not to
-- ARGV[5]  client? string: the Client's id when it waits, listening on its own channel (with
--          KEYS[4]): when the lock is busy, the Client joins the queue (or stays in it) for
--          ARGV[6] ms (prelude_wake's wait_join), and when it takes the lock, it leaves the
--          queue (wait_took); left out by an attempt that does not wait in the queue
-- ARGV[6]  aliveMillis? string: how long, in milliseconds (a decimal string), the Client counts as
--          alive in the queue from now; with ARGV[5]
--
-- Returns {1, 1, fencing token (0 without fencing)} when acquired, also
--                 for a re-sent copy while the hold lasts;
--         {0, pttl, foreign} when another owner holds it (pttl -1: no
--                 expiry); foreign (with ARGV[5]) is 1 when that owner
--                 is not the holder the queue recorded, so the Client also
--                 listens on Redisson's channel (prelude_wake), else 0;
--         {0, -3} when the hold was released, undone or force-unlocked
--                 already (a late copy): nothing changed.
--         An error reply (WRONGTYPE, or "ERR value is not an integer") when
--         the fencing counter KEYS[3] holds another type: nothing changed.
--
-- Reply    {code, value, [fence]}
-- Code     Acquired = 1: the hold was taken
-- Code     Busy = 0: another owner holds it; Value is its PTTL, or Cancelled
-- Code     Cancelled = -3: Value when the hold was released, undone or force-unlocked already
local hash, req = KEYS[1], KEYS[2]
local field = string.sub(req, ARGV[2] + 0)
if redis.call('exists', hash, req) == 0 then
  local t = redis.call('time')
  local left = ARGV[3] - (t[1] * 1000 + math.floor(t[2] / 1000))
  if left < 0 then
    error({err = 'REDISYNC_LATE request delivered after its deadline: not applied'})
  end
  local token = 0
  if ARGV[4] == '1' then
    -- before any write: a counter of another type fails here, with
    -- nothing changed. The token is raised to the server's clock in
    -- microseconds (prelude_lock's next_token, written out)
    token = redis.call('incr', KEYS[3])
    local floor = t[1] * 1000000 + t[2]
    if token < floor then
      redis.call('set', KEYS[3], string.format('%d', floor))
      token = floor
    end
  end
  redis.call('hset', hash, field, '1')
  redis.call('pexpire', hash, ARGV[1])
  if ARGV[1] - 1000 < left then
    -- the lease may end before the deadline
    -- %d: a token of 16 digits would print as 1.79...e+15 with ..
    redis.call('set', req, '1:' .. string.format('%d', token), 'px', left + 1000)
  end
  if ARGV[5] then
    -- the Client waited, in the queue: it leaves it (a first attempt,
    -- which did not queue, spares the uncontended lock the look)
    wait_took(KEYS[4], KEYS[5], ARGV[5], field)
  end
  return {1, 1, token}
end
local rec = redis.call('get', req)
if rec then
  redis.call('set', req, rec, 'keepttl') -- a replay is a write (prelude_request's recorded)
  local count, token = string.match(rec, '^(%d+):(%d+)$')
  if count then
    return {1, tonumber(count), tonumber(token)}
  end
  return {0, -3}
end
if redis.call('hexists', hash, field) == 1 then
  redis.call('hincrby', hash, field, 0) -- a replay is a write (prelude_request's recorded)
  local token = 0
  if ARGV[4] == '1' then
    -- nobody else takes a token while this owner holds the lock
    token = tonumber(redis.call('get', KEYS[3])) or 0
  end
  return {1, 1, token}
end
lock_layout(hash, false) -- busy only with a lock: another hash is refused
local pttl = redis.call('pttl', hash)
if ARGV[5] then
  return {0, pttl, wait_join(KEYS[4], KEYS[5], ARGV[5], ARGV[6], hash)}
end
return {0, pttl}
