-- semaphore_drain: take every available permit of a counted semaphore: set
-- the count to 0 and return what it was (a negative count is reset to 0
-- too). An absent semaphore stays absent. Retry-safe through the request key
-- (a re-sent request returns the first run's count, not 0).
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  request: request key of this call
-- ARGV[1]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
--
-- Returns the number of permits available before the call.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    drained
local replay = count_replay(KEYS[2], ARGV[1])
if replay then
  return replay
end
local value = redis.call('get', KEYS[1]) -- WRONGTYPE when not a string
if value then
  if not tonumber(value) then
    wrong_type(KEYS[1])
  end
  redis.call('set', KEYS[1], '0')
else
  value = '0'
end
record(KEYS[2], value, ARGV[1])
return tonumber(value)
