-- prelude_permits: helpers shared by the permit-expirable semaphore's
-- scripts, prepended to each of them when it is loaded. It defines locals
-- only and runs no command by itself.
--
-- KEYS     none of its own: the functions take the keys they touch
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   never                  the score of a permit that never expires
--                          (922337203685477, Redisson's)
--   reclaim(avail, zset)   gives expired permits back, by the Redis server's
--                          clock: removes the ids of zset scored at or
--                          before now and adds their number to the string
--                          avail. It first reads avail through number_at
--                          (prelude_types, composed before this one), so
--                          a key of another type fails before anything is
--                          written. Returns now (epoch ms), the number
--                          expired, the new available count (nil when none
--                          expired), and the available count after it
--                          (always a number: 0 when avail does not exist)
--   announce(cmd, channel, available)
--                          publishes the available count with cmd
--                          ("publish" or "spublish") when it is above 0
--   expiry(now, lease)     the score of a permit taken at now with a lease
--                          of lease ms (≤ 0: never expires)
local never = 922337203685477

local function reclaim(avail, zset)
  local current = number_at(avail)
  local t = redis.call('time')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local expired = redis.call('zremrangebyscore', zset, '-inf', string.format('%.0f', now))
  local available
  if expired > 0 then
    available = redis.call('incrby', avail, expired)
    current = available
  end
  return now, expired, available, current
end

local function announce(cmd, channel, available)
  if available and available > 0 then
    redis.call(cmd, channel, string.format('%d', available))
  end
end

local function expiry(now, lease)
  if lease > 0 and now + lease < never then
    return string.format('%.0f', now + lease)
  end
  return string.format('%.0f', never)
end

