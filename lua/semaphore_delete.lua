-- semaphore_delete: delete a semaphore's keys (counted: the count;
-- permit-expirable: the count and the zset of acquired permits). Nothing is
-- published: waiters find no permits and keep waiting. Retry-safe through the
-- request key (a re-sent request reports whether the first run deleted).
--
-- KEYS[1]  request: request key of this call
-- KEYS[2..] deleted: the keys to delete: the count (a string), then, for the
--          permit-expirable semaphore, the zset of acquired permits
-- ARGV[1]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
--
-- Returns 1 when any of the keys existed, 0 otherwise.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when the count is not a string holding a number, or the zset no
--         zset: every key is checked before any is deleted, so nothing
--         changed.
--
-- Reply    existed
-- Code     Existed = 1: any of the keys existed
local replay = count_replay(KEYS[1], ARGV[1])
if replay then
  return replay
end
number_at(KEYS[2])
for i = 3, #KEYS do
  redis.call('zcard', KEYS[i]) -- WRONGTYPE when not a zset
end
local deleted = 0
for i = 2, #KEYS do
  deleted = deleted + redis.call('del', KEYS[i])
end
local result = 0
if deleted > 0 then
  result = 1
end
record(KEYS[1], result, ARGV[1])
return result
