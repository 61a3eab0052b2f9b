-- semaphore_permit_update_lease: give an acquired permit of a
-- permit-expirable semaphore a new lease, counted from now. Expired permits
-- are first given back, by the Redis server's clock (and published when that
-- leaves permits available); an expired permit's lease cannot be renewed.
-- Running it twice has the effect of running it once (the lease is counted
-- from the later run), so it needs no request key.
--
-- KEYS[1]  semaphore: available permits
-- KEYS[2]  zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel (redisson_sc:{name})
-- ARGV[1]  permit id, 16 raw bytes
-- ARGV[2]  lease in milliseconds; ≤ 0: the permit never expires
-- ARGV[3]  publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns 1 when the lease was set; 0 when the permit is unknown or expired.
local never = 922337203685477
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], '-inf', string.format('%.0f', now))
if expired > 0 then
  local available = redis.call('incrby', KEYS[1], expired)
  if available > 0 then
    redis.call(ARGV[3], KEYS[3], string.format('%d', available))
  end
end
if not redis.call('zscore', KEYS[2], ARGV[1]) then
  return 0
end
local lease = tonumber(ARGV[2])
local score = string.format('%.0f', never)
if lease > 0 and now + lease < never then
  score = string.format('%.0f', now + lease)
end
redis.call('zadd', KEYS[2], 'xx', score, ARGV[1])
return 1
