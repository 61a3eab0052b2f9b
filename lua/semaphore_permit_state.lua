-- semaphore_permit_state: report the available and acquired permits of a
-- permit-expirable semaphore. Expired permits are first given back, by the
-- Redis server's clock (and published when that leaves permits available).
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- ARGV[1]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns {available permits (absent: 0), acquired permits}.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    {available, acquired}

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[1] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[1], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[1] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
local _, expired, available, current = reclaim(KEYS[1], KEYS[2])
if expired > 0 then
  announce(ARGV[1], KEYS[3], available)
else
  available = current
end
return {available, redis.call('zcard', KEYS[2])}
