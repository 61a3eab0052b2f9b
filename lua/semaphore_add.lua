-- semaphore_add: add n (possibly negative) permits to the available count of
-- a semaphore (counted or permit-expirable), creating it when absent, and
-- publish the new count when permits are available. Retry-safe through the
-- request key.
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: expirable: the zset {name}:timeout of acquired permit ids scored
--          by expiry in epoch ms (counted: any key of the slot; not touched)
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- KEYS[4]  request: request key of this call
-- ARGV[1]  n int64: n, the number of permits to add; negative removes
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  expirable bool: "1": expirable. Expired permits are first given back, by the
--          Redis server's clock.
-- ARGV[4]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns the number of available permits afterwards (may be negative).
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    available

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[4] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[4], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[4] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
local replay = count_replay(KEYS[4], ARGV[2])
if replay then
  return replay
end
number_at(KEYS[1]) -- a key of another type fails here, before any write
local expired = 0
if ARGV[3] == '1' then
  local t = redis.call('time')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  expired = redis.call('zremrangebyscore', KEYS[2], '-inf', string.format('%.0f', now))
  if expired > 0 then
    redis.call('incrby', KEYS[1], expired)
  end
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
if value > 0 and ((ARGV[1] + 0) > 0 or expired > 0) then
  redis.call(ARGV[4], KEYS[3], string.format('%d', value))
end
record(KEYS[4], string.format('%d', value), ARGV[2])
return value
