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
-- ARGV[1]  n int64: n, the number of permits (> 0)
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  seq int64: this request's number in the ledger
-- ARGV[4]  low int64: the client's low-water mark in the ledger (≤ seq)
--
-- Returns 1 when the n permits were taken (the ledger holds n, for an undo);
--         0 when fewer than n are available (nothing changed);
--         -1 when this request was cancelled (semaphore_release undo)
--         first, or is a stale copy (below the low-water mark).
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    code
-- Code     Taken = 1: the permits were taken
-- Code     Short = 0: fewer are available
-- Code     Cancelled = -1: this request was cancelled first, or is a stale copy
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
if available >= (ARGV[1] + 0) then
  redis.call('decrby', KEYS[1], ARGV[1])
  ledger_record(KEYS[2], ARGV[3], ARGV[1])
  return 1
end
-- A shortage is recorded too: a copy held up in the network must not take
-- permits after another copy of this request was answered "short".
ledger_record(KEYS[2], ARGV[3], 'short')
return 0
