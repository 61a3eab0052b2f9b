-- semaphore_permit_acquire: take n permits of a permit-expirable semaphore
-- (Redisson RPermitExpirableSemaphore layout), one id per permit, if n are
-- available. The semaphore is a string holding the available count; each
-- acquired permit is a member (its 16 raw id bytes) of the zset
-- {name}:timeout scored by its expiry in epoch milliseconds, or by
-- 922337203685477 when it never expires. Expired permits are first given
-- back to the available count, by the Redis server's clock, and published
-- when that leaves permits available. Retry-safe: the outcome is recorded
-- under the request key, a shortage too, and a re-sent request returns the
-- record: a copy held up in the network must not take permits after another
-- copy of the same request was answered "short".
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- KEYS[4]  request: request key of this acquisition
-- ARGV[1]  leaseMillis int64: lease in milliseconds; ≤ 0: the permits never expire
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[4..]  permits string: the ids of the new permits, 16 raw bytes each; n = #ARGV - 3
--
-- Returns {1} when the permits were taken;
--         {0, available, ms until the nearest permit expiry (0: none
--             expires)} when fewer than n are available (nothing taken);
--         {-1} when this request was cancelled (semaphore_permit_release
--             undo) first.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    {code, [available], [expiryMillis]}
-- Code     Taken = 1: the permits were taken
-- Code     Short = 0: fewer are available
-- Code     Cancelled = -1: this request was cancelled first

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[3], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
local rec = recorded(KEYS[4])
if rec then
  if rec == 'cancelled' then
    return {-1}
  elseif rec == 'short' then
    return {0, 0, 0}
  end
  return {1}
end
refuse_late(ARGV[2])
local now, expired, _, available = reclaim(KEYS[1], KEYS[2])
local n = #ARGV - 3
if available >= n then
  local score = expiry(now, ARGV[1] + 0)
  for i = 4, #ARGV do
    redis.call('zadd', KEYS[2], score, ARGV[i])
  end
  available = redis.call('decrby', KEYS[1], n)
  record(KEYS[4], n, ARGV[2])
  if expired > 0 then
    announce(ARGV[3], KEYS[3], available)
  end
  return {1}
end
if expired > 0 then
  announce(ARGV[3], KEYS[3], available)
end
record(KEYS[4], 'short', ARGV[2])
local retry = 0
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] then
  local at = tonumber(first[2])
  if at < never then
    retry = at - now
  end
end
return {0, available, retry}
