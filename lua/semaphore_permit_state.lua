-- semaphore_permit_state: report the available and acquired permits of a
-- permit-expirable semaphore. Expired permits are first given back, by the
-- Redis server's clock (and published when that leaves permits available).
--
-- KEYS[1]  semaphore: available permits
-- KEYS[2]  zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel (redisson_sc:{name})
-- ARGV[1]  publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- Returns {available permits (absent: 0), acquired permits}.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zremrangebyscore', KEYS[2], '-inf', string.format('%.0f', now))
local available
if expired > 0 then
  available = redis.call('incrby', KEYS[1], expired)
  if available > 0 then
    redis.call(ARGV[1], KEYS[3], string.format('%d', available))
  end
else
  available = tonumber(redis.call('get', KEYS[1]) or '0')
end
return {available, redis.call('zcard', KEYS[2])}
