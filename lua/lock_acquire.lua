-- lock_acquire: take a hold of a reentrant lock (Redisson RLock layout) for
-- one owner. The lock is a hash whose field <owner> holds the owner's hold
-- count; the hash's TTL is the lease. The count is set to what the client
-- says (its own count is the authority), never added to what Redis has: a
-- count left by a release whose reply was lost is overwritten, not adopted.
-- Retry-safe: the result is recorded under the request key, and a re-sent
-- request returns the record. Used by the lock and the spin lock.
--
-- KEYS[1]  lock: lock hash (the lock's name)
-- KEYS[2]  request: request key of this acquisition
-- KEYS[3]  counter: fencing counter (read only when ARGV[4] == "1")
-- KEYS[4]  waiters?: the lock's queue of waiting Clients (prelude_wake); left out by an
--          attempt that does not wait in the queue (a first attempt, the spin lock's)
-- KEYS[5]  waitState?: the queue's state: when each waiting Client counts as alive, and the
--          holder recorded (prelude_wake); with KEYS[4]
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  field string: owner field "<client id>:<token>"
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  fenced bool: "1" for a fenced lock: an acquisition that starts the hold
--          (ARGV[5] == 1) takes a fencing token (next_token: INCR of KEYS[3], raised to the server clock), a
--          re-entry keeps the hold's (ARGV[6]); "0" not fenced
-- ARGV[5]  count int64: the owner's hold count once acquired, as the client counts it
-- ARGV[6]  fence int64: in a re-entry (ARGV[5] > 1), the hold's fencing token (0 for a
--          hold without one), recorded and returned; ignored otherwise
-- ARGV[7]  client? string: the Client's id when it waits, listening on its own channel (with
--          KEYS[4]): when the lock is busy, the Client joins the queue (or stays in it) for
--          ARGV[8] ms (prelude_wake's wait_join), and when it takes the lock, it leaves the
--          queue (wait_took); left out by an attempt that does not wait in the queue
-- ARGV[8]  aliveMillis? string: how long, in milliseconds (a decimal string), the Client counts as
--          alive in the queue from now; with ARGV[7]
--
-- Returns {1, hold count, fencing token (0 without fencing; the hold's for
--                 a re-entry)} when acquired;
--         {0, pttl, foreign} when another owner holds it (pttl -1: no
--                 expiry); foreign (with ARGV[7]) is 1 when that owner
--                 is not the holder the queue recorded (prelude_wake);
--         {0, -3} when this request was cancelled (lock_release undo) first;
--         {-2, 0} when a reentrant acquisition (count > 1) finds the owner's
--                 hold gone (lost): nothing changed.
--         An error reply (WRONGTYPE, or "ERR value is not an integer") when
--         the fencing counter KEYS[3] holds another type: nothing changed
--         (take_hold increments it before it writes).
--
-- Reply    {code, value, [fence]}
-- Code     Acquired = 1: the hold was taken; Value is the hold count
-- Code     Busy = 0: another owner holds it; Value is its PTTL, or Cancelled
-- Code     Lost = -2: a re-entry found the owner's hold gone
-- Code     Cancelled = -3: Value when this request was cancelled first
local replay = fenced_replay(KEYS[2], ARGV[3])
if replay then
  return replay
end
local count = ARGV[5] + 0
local free = redis.call('exists', KEYS[1]) == 0
if not free and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  if count > 1 then
    return {-2, 0}
  end
  lock_layout(KEYS[1], false) -- busy only with a lock: another hash is refused
  local pttl = redis.call('pttl', KEYS[1])
  if ARGV[7] then
    return {0, pttl, wait_join(KEYS[4], KEYS[5], ARGV[7], ARGV[8], KEYS[1])}
  end
  return {0, pttl}
end
if free and count > 1 then
  return {-2, 0}
end
local took = take_hold(KEYS[1], ARGV[2], count, ARGV[1], ARGV[4], KEYS[3], KEYS[2], ARGV[3], ARGV[6])
if count == 1 and ARGV[7] then
  wait_took(KEYS[4], KEYS[5], ARGV[7], ARGV[2]) -- after take_hold, which fails before any write
end
return took
