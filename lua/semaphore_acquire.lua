-- semaphore_acquire: take n permits of a counted semaphore (Redisson
-- RSemaphore layout) if that many are available. The semaphore is a string
-- holding the number of available permits; an absent key holds none.
-- Retry-safe: a success is recorded under the request key, and a re-sent
-- request returns the record instead of taking the permits a second time.
--
-- KEYS[1]  semaphore: semaphore (its name): available permits
-- KEYS[2]  request: request key of this acquisition
-- ARGV[1]  n int64: n, the number of permits (> 0)
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
--
-- Returns 1 when the n permits were taken (the record holds n, for an undo);
--         0 when fewer than n are available (nothing changed);
--         -1 when this request was cancelled (semaphore_release undo) first.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    code
-- Code     Taken = 1: the permits were taken
-- Code     Short = 0: fewer are available
-- Code     Cancelled = -1: this request was cancelled first
local rec = recorded(KEYS[2])
if rec then
  if rec == 'cancelled' then
    return -1
  end
  return 1
end
refuse_late(ARGV[2])
local available = number_at(KEYS[1]) -- a key of another type fails here
if available >= (ARGV[1] + 0) then
  redis.call('decrby', KEYS[1], ARGV[1])
  record(KEYS[2], ARGV[1], ARGV[2])
  return 1
end
return 0
