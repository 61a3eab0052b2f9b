-- semaphore_release: give n permits back to a counted semaphore and publish
-- the new number of available permits, or undo an acquisition whose reply
-- never arrived. Releasing needs no owner: it creates the key when absent
-- (a release of an unset semaphore leaves n permits). Retry-safe through the
-- request key.
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  channel: channel (redisson_sc:{name})
-- KEYS[3]  request: request key of this release
-- KEYS[4]  undoRequest: undo mode only: the request key of the acquisition to undo
--          (otherwise any key of the semaphore's slot; not touched)
-- ARGV[1]  n int64: n, the number of permits (> 0); ignored in undo mode, where the
--          acquisition's record says how many it took
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  undo bool: "1": undo mode. The permits are given back only if the
--          acquisition KEYS[4] took place; either way it is marked cancelled
--          so that a late copy of it does nothing.
-- ARGV[4]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns {1, available permits after the release};
--         {0, 0} in undo mode when the acquisition never took place.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    {code, available}
-- Code     Released = 1: Available is the permits after the release
-- Code     NotTaken = 0: in undo mode, the acquisition never took place
local rec = recorded(KEYS[3])
if rec then
  return {1, tonumber(rec)}
end
refuse_late(ARGV[2])
local n = ARGV[1]
if ARGV[3] == '1' then
  local acq = take_for_undo(KEYS[4], ARGV[2])
  if not acq then
    return {0, 0}
  end
  n = acq
end
local value = redis.call('incrby', KEYS[1], n)
local text = string.format('%d', value)
redis.call(ARGV[4], KEYS[2], text)
record(KEYS[3], text, ARGV[2])
return {1, value}
