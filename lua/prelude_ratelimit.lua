-- prelude_ratelimit: helpers shared by the rate limiter's scripts (Redisson
-- RRateLimiter's layout), prepended to each of them when it is loaded. It
-- defines locals only and runs no command by itself.
--
-- A grant is a member of a permits zset scored by its time in epoch ms by
-- the Redis server's clock: a length byte (16), 16 random bytes and the
-- permits as a 4-byte little-endian unsigned integer, the very bytes of
-- Redisson's struct.pack('Bc0I', 16, random, permits). It is packed by hand
-- so that the scripts also run where the struct library is missing
-- (miniredis); Redisson's struct.unpack reads it all the same.
--
-- A grant made at s is live while s >= now - interval: one ms longer than
-- Redisson's rule (live while s > now - interval; it gives a grant back at
-- exactly s + interval), so a Go script never frees a permit before a Java
-- client would, and any window of interval ms, both ends included, holds
-- at most rate of the Go scripts' grants. The value key plus the
-- permits of the live grants make the rate: every script here keeps that
-- sum, and restores it when it finds it broken (by a lost value key, or by
-- Redisson 3.52's release and availablePermits).
--
-- KEYS     none of its own: the functions take the keys they touch
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   rl_fmt(x)                  x as an integer string (no exponent)
--   rl_config(hash)            {rate, interval, type, keepalive} of the
--                              limiter (numbers), or nil when not set
--   rl_pack(random, permits)   a grant's member
--   rl_permits(member)         the permits a grant's member holds
--   rl_live(zset)              the permits of every grant in zset
--   rl_settle(value, zset, rate, interval, now)
--                              (REDISYNC_WRONGTYPE for a value that is no
--                              number, before any write) drops the grants
--                              that are no longer live and
--                              returns the permits left, written back to
--                              value: value plus the permits dropped, or,
--                              when value is missing or that is above rate,
--                              rate minus the live grants (never below 0)
--   rl_recount(value, zset, rate, interval, now)
--                              drops the grants no longer live and sets
--                              value to rate minus the live grants (at
--                              least 0); returns it
--   rl_delay(zset, short, interval, now)
--                              ms until the oldest grants holding at least
--                              short permits are no longer live; nil when
--                              the live grants hold fewer (it reads at most
--                              short grants)
--   rl_budget(cfg, k)          the keys of the budget the configuration's
--                              type says: value, zset and registry. k is
--                              KEYS, in the layout the acquire, release and
--                              available scripts share: k[2], k[3] (and no
--                              registry) for OVERALL; k[4], k[5] and k[6]
--                              for PER_CLIENT
--   rl_join(registry, id)      adds id to registry (nil: nothing), once
--                              the budget's keys were read
--   rl_keep(hash, keepalive, k1, k2, ...)
--                              the keys' expiry: keepalive ms (hash
--                              included) when keepalive > 0, else the
--                              hash's remaining TTL when it has one (a
--                              nil key ends the list)
local function rl_fmt(x)
  return string.format('%.0f', x)
end

local function rl_config(hash)
  local c = redis.call('hmget', hash, 'rate', 'interval', 'type', 'keepAliveTime')
  if not c[1] or not c[2] or not c[3] then
    return nil
  end
  return {rate = tonumber(c[1]), interval = tonumber(c[2]), type = tonumber(c[3]),
    keepalive = tonumber(c[4] or '0') or 0}
end

local function rl_pack(random, permits)
  return string.char(16) .. random .. string.char(permits % 256,
    math.floor(permits / 256) % 256, math.floor(permits / 65536) % 256,
    math.floor(permits / 16777216) % 256)
end

local function rl_permits(member)
  local a, b, c, d = string.byte(member, 18, 21)
  return a + b * 256 + c * 65536 + d * 16777216
end

local function rl_live(zset)
  local sum = 0
  for _, m in ipairs(redis.call('zrange', zset, 0, -1)) do
    sum = sum + rl_permits(m)
  end
  return sum
end

-- rl_drop removes the grants of zset made before now - interval and
-- returns the permits they held.
local function rl_drop(zset, interval, now)
  local bound = '(' .. rl_fmt(now - interval)
  local old = redis.call('zrangebyscore', zset, '-inf', bound)
  local released = 0
  for _, m in ipairs(old) do
    released = released + rl_permits(m)
  end
  if #old > 0 then
    redis.call('zremrangebyscore', zset, '-inf', bound)
  end
  return released
end

local function rl_recount(value, zset, rate, interval, now)
  rl_drop(zset, interval, now)
  local left = math.max(rate - rl_live(zset), 0)
  redis.call('set', value, rl_fmt(left))
  return left
end

local function rl_settle(value, zset, rate, interval, now)
  -- value is read first, and the zset's first command (in rl_drop) is a
  -- read: a key of another type fails before anything is written.
  local v = redis.call('get', value)
  if v and not tonumber(v) then
    error({err = 'REDISYNC_WRONGTYPE key ' .. value .. ' holds a string that is not a count of permits'})
  end
  local released = rl_drop(zset, interval, now)
  if not v then
    -- A lost value key does not refill the budget while grants live
    -- (Redisson 3.52 sets it to rate and over-admits).
    local left = math.max(rate - rl_live(zset), 0)
    redis.call('set', value, rl_fmt(left))
    return left
  end
  local left = tonumber(v) + released
  if left > rate then
    -- Above rate only when someone broke the sum (Redisson 3.52's
    -- availablePermits adds the dropped grants without a limit, #7329, and
    -- its release gives permits back whose grants stay live): what the
    -- live grants leave is the truth.
    left = math.max(rate - rl_live(zset), 0)
  end
  if left ~= tonumber(v) then
    redis.call('set', value, rl_fmt(left))
  end
  return left
end

local function rl_delay(zset, short, interval, now)
  -- Every grant holds at least one permit: the oldest short grants are
  -- enough to look at.
  local grants = redis.call('zrange', zset, 0, short - 1, 'withscores')
  for i = 1, #grants, 2 do
    short = short - rl_permits(grants[i])
    if short <= 0 then
      return math.max(tonumber(grants[i + 1]) + interval + 1 - now, 1)
    end
  end
  return nil
end

local function rl_budget(cfg, k)
  if cfg.type == 1 then
    return k[4], k[5], k[6]
  end
  return k[2], k[3], nil
end

-- Every script that may create a PER_CLIENT key registers the client
-- (rl_join), after rl_settle has read the budget's keys: ratelimit_delete
-- and ratelimit_set_rate find PER_CLIENT keys only through the registry.
local function rl_join(registry, id)
  if registry then
    redis.call('sadd', registry, id)
  end
end

local function rl_keep(hash, keepalive, ...)
  local ttl = keepalive
  if keepalive > 0 then
    redis.call('pexpire', hash, rl_fmt(keepalive))
  else
    ttl = redis.call('pttl', hash)
  end
  if ttl > 0 then
    for _, k in ipairs({...}) do
      redis.call('pexpire', k, rl_fmt(ttl))
    end
  end
end
