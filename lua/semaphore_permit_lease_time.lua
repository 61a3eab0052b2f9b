-- semaphore_permit_lease_time: report how long an acquired permit of a
-- permit-expirable semaphore has left. Expired permits are first given back,
-- by the Redis server's clock (and published when that leaves permits
-- available).
--
-- KEYS[1]  semaphore: available permits
-- KEYS[2]  zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel (redisson_sc:{name})
-- ARGV[1]  permit id, 16 raw bytes
-- ARGV[2]  publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns the milliseconds left (≥ 1); -1 when the permit never expires;
--         -2 when it is unknown or expired.
local never = 922337203685477
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], '-inf', string.format('%.0f', now))
if expired > 0 then
  local available = redis.call('incrby', KEYS[1], expired)
  if available > 0 then
    redis.call(ARGV[2], KEYS[3], string.format('%d', available))
  end
end
local score = redis.call('zscore', KEYS[2], ARGV[1])
if not score then
  return -2
end
local at = tonumber(score)
if at >= never then
  return -1
end
return at - now
