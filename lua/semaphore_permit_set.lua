-- semaphore_permit_set: set the total number of permits of a
-- permit-expirable semaphore (available + acquired) to n: the available
-- count becomes n minus the permits still acquired, which may be negative.
-- Expired permits are first given back, by the Redis server's clock. The new
-- count is published when permits are available. Running it twice has the
-- effect of running it once, so it needs no request key.
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- ARGV[1]  n int64: n, the total number of permits (≥ 0)
-- ARGV[2]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
--
-- Returns the number of available permits afterwards.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    available

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[2] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[2], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[2] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
refuse_late(ARGV[3])
reclaim(KEYS[1], KEYS[2])
local available = ARGV[1] - redis.call('zcard', KEYS[2])
redis.call('set', KEYS[1], string.format('%d', available))
announce(ARGV[2], KEYS[3], available)
return available
