-- semaphore_acquire: take n permits of a counted semaphore (Redisson
-- RSemaphore layout) if that many are available. The semaphore is a string
-- holding the number of available permits; an absent key holds none.
-- Retry-safe through the client's ledger (prelude_ledger): the outcome (a shortage too) is
-- recorded under the request's number, and a re-sent copy returns it
-- instead of taking the permits a second time, however late it comes while
-- the client still asks.
--
-- KEYS[1]  semaphore: semaphore (its name): available permits
-- KEYS[2]  ledger: the client's ledger on this semaphore (prelude_ledger)
-- KEYS[3]  waiters?: the semaphore's queue of waiting Clients (prelude_wake); left out by an
--          attempt that does not wait in it (with KEYS[4] and ARGV[5] to ARGV[9])
-- KEYS[4]  waitState?: the queue's state (prelude_wake); with KEYS[3]
-- ARGV[1]  n int64: n, the number of permits (> 0)
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  seq int64: this request's number in the ledger
-- ARGV[4]  low int64: the client's low-water mark in the ledger (≤ seq)
-- ARGV[5]  client? string: the Client's id when it waits, listening on its own channel (with
--          KEYS[3]): when fewer permits are available, the Client joins the queue (or stays
--          in it) for ARGV[6] ms (prelude_wake's wait_join), and when it takes them, it
--          leaves the queue (wait_took). Either way the chain goes on: an attempt that
--          leaves permits, or that took the first place, wakes the next Client queued
--          (wait_next), which then tries, or learns that it is first now
-- ARGV[6]  aliveMillis? string: how long, in milliseconds (a decimal string), the Client counts as
--          alive in the queue from now; with ARGV[5]
-- ARGV[7]  wakePrefix? string: the waiting Clients' channels: this prefix and a Client's id;
--          with ARGV[5]
-- ARGV[8]  publish? string: publish command for the Clients' channels: "publish", or "spublish"
--          for sharded pub/sub on a Redis Cluster; with ARGV[5]
-- ARGV[9]  probe? string: "1" where a publish counts every receiver (prelude_wake); with ARGV[5]
--
-- Returns 1 when the n permits were taken (the ledger holds n, for an undo);
--         0 when fewer than n are available (nothing changed but the
--            queue); 2 likewise when the Client (ARGV[5]) is the first in
--            the queue: it listens on the semaphore's channel too, where a
--            release that knows nothing of the queue (a Redisson client's,
--            AddPermits) publishes;
--         -1 when this request was cancelled (semaphore_release undo)
--         first, or is a stale copy (below the low-water mark).
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    code
-- Code     Taken = 1: the permits were taken
-- Code     Short = 0: fewer are available
-- Code     ShortFirst = 2: fewer are available, and the Client is the first in the queue
-- Code     Cancelled = -1: this request was cancelled first, or is a stale copy
if ARGV[5] then
  local denied = wait_denied(ARGV[8], ARGV[7])
  if denied then
    return denied
  end
end
local available = number_at(KEYS[1]) -- a key of another type fails here, before any write
local rec = ledger_replay(KEYS[2], ARGV[3], ARGV[4], ARGV[2])
if rec then
  if rec == 'cancelled' or rec == 'stale' then
    return -1
  elseif rec == 'short' then
    return 0
  end
  return 1
end
local n = ARGV[1] + 0
if available >= n then
  redis.call('decrby', KEYS[1], ARGV[1])
  ledger_record(KEYS[2], ARGV[3], ARGV[1])
  if ARGV[5] and redis.call('exists', KEYS[3]) == 1 then
    local first = redis.call('zrange', KEYS[3], 0, 0)[1] == ARGV[5]
    wait_took(KEYS[3], KEYS[4], ARGV[5], nil)
    if first or available > n then
      -- the next Client takes what is left, or learns it is first now
      wait_next(KEYS[3], KEYS[4], ARGV[7], ARGV[8], string.format('%d', available - n), ARGV[9], nil)
    end
  end
  return 1
end
-- A shortage is recorded too: a copy held up in the network must not take
-- permits after another copy of this request was answered "short".
ledger_record(KEYS[2], ARGV[3], 'short')
if ARGV[5] then
  local first = wait_join(KEYS[3], KEYS[4], ARGV[5], ARGV[6], KEYS[1])
  if available > 0 then
    -- too few for this Client: the next one may need fewer
    wait_next(KEYS[3], KEYS[4], ARGV[7], ARGV[8], string.format('%d', available), ARGV[9], ARGV[5])
  end
  if first == 1 then
    return 2
  end
end
return 0
