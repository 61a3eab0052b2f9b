-- semaphore_permit_update_lease: give an acquired permit of a
-- permit-expirable semaphore a new lease, counted from now. Expired permits
-- are first given back, by the Redis server's clock (and published when that
-- leaves permits available); an expired permit's lease cannot be renewed.
-- Running it twice has the effect of running it once (the lease is counted
-- from the later run), so it needs no request key.
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- ARGV[1]  permit string: permit id, 16 raw bytes
-- ARGV[2]  leaseMillis int64: lease in milliseconds; ≤ 0: the permit never expires
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[4]  deadline int64: request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
--
-- Returns 1 when the lease was set; 0 when the permit is unknown or expired.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    set
-- Code     Set = 1: the lease was set
-- Code     Unknown = 0: the permit is unknown or expired

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[3], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
refuse_late(ARGV[4])
local now, _, available = reclaim(KEYS[1], KEYS[2])
announce(ARGV[3], KEYS[3], available)
if not redis.call('zscore', KEYS[2], ARGV[1]) then
  return 0
end
redis.call('zadd', KEYS[2], 'xx', expiry(now, ARGV[2] + 0), ARGV[1])
return 1
