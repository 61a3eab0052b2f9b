-- semaphore_permit_lease_time: report how long an acquired permit of a
-- permit-expirable semaphore has left. Expired permits are first given back,
-- by the Redis server's clock (and published when that leaves permits
-- available).
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- ARGV[1]  permit string: permit id, 16 raw bytes
-- ARGV[2]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns the milliseconds left (≥ 1); -1 when the permit never expires;
--         -2 when it is unknown or expired.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    millis
-- Code     NoExpiry = -1: the permit never expires
-- Code     Unknown = -2: the permit is unknown or expired

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[2] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[2], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[2] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
local now, _, available = reclaim(KEYS[1], KEYS[2])
announce(ARGV[2], KEYS[3], available)
local score = redis.call('zscore', KEYS[2], ARGV[1])
if not score then
  return -2
end
local at = tonumber(score)
if at >= never then
  return -1
end
return at - now
