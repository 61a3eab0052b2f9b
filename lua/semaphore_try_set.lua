-- semaphore_try_set: set the number of available permits of a semaphore
-- (counted or permit-expirable) only if it has not been set, and publish it.
-- Retry-safe through the request key (a re-sent request reports the first
-- run's answer, not "already set").
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: expirable: the zset {name}:timeout of acquired permit ids scored
--          by expiry in epoch ms (counted: any key of the slot; not touched)
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- KEYS[4]  request: request key of this call
-- ARGV[1]  n int64: n, the number of permits (≥ 0)
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  expirable bool: "1": expirable. Expired permits are first given back (which sets
--          the semaphore), by the Redis server's clock.
-- ARGV[4]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns 1 when the permits were set; 0 when the semaphore was already set.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    set
-- Code     Set = 1: the permits were set
-- Code     AlreadySet = 0: the semaphore was already set

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[4] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[4], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[4] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
local replay = count_replay(KEYS[4], ARGV[2])
if replay then
  return replay
end
if ARGV[3] == '1' then
  local _, _, available = reclaim(KEYS[1], KEYS[2])
  announce(ARGV[4], KEYS[3], available)
end
local result = 0
local current = redis.call('get', KEYS[1]) -- WRONGTYPE when not a string
if current and not tonumber(current) then
  wrong_type(KEYS[1])
end
if not current then
  redis.call('set', KEYS[1], ARGV[1])
  if (ARGV[1] + 0) > 0 then
    redis.call(ARGV[4], KEYS[3], ARGV[1])
  end
  result = 1
end
record(KEYS[4], result, ARGV[2])
return result
