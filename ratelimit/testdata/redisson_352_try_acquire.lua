-- redisson_352_try_acquire: a test-only reproduction of what Redisson 3.52's
-- RRateLimiter.tryAcquire script does (from shared/REDISSON-BEHAVIOUR.md,
-- written here, not copied): the Java side of the wire-compatibility tests,
-- run beside redisync's scripts on the same keys. Its known bugs are kept
-- on purpose (an empty log with too few permits fails on a nil score; a
-- lost value key refills the budget), so the tests can show the Go side
-- handles what it leaves.
--
-- Its rules, as Redisson's: a grant scored s is given back once
-- s <= now - interval (Redisson reads the grants with scores from 0 to
-- now - interval, both ends included), so it counts while
-- s > now - interval, for interval ms; redisync's scripts keep it one ms
-- longer. At the end, with keepAliveTime > 0 the hash, value and permits
-- keys expire after it; otherwise the value and permits keys take the
-- hash's remaining TTL, when it has one.
--
-- KEYS[1]  limiter: the configuration hash
-- KEYS[2]  OVERALL value
-- KEYS[3]  PER_CLIENT value of this client
-- KEYS[4]  OVERALL permits zset
-- KEYS[5]  PER_CLIENT permits zset of this client
-- ARGV[1]  permits to take
-- ARGV[2]  now, epoch ms (the Java client's clock); empty: the server's
--          clock, read here (the tests' stand-in for a Java host whose
--          clock is exactly the server's; Redisson always sends its own)
-- ARGV[3]  16 random bytes of the member
--
-- Returns nil when granted; else the ms to wait.
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local type = redis.call('hget', KEYS[1], 'type')
local keepAlive = tonumber(redis.call('hget', KEYS[1], 'keepAliveTime') or '0') or 0
assert(rate ~= false and interval ~= false and type ~= false, 'RateLimiter is not initialized')
local valueName = KEYS[2]
local permitsName = KEYS[4]
if type == '1' then
  valueName = KEYS[3]
  permitsName = KEYS[5]
end
assert(tonumber(rate) >= tonumber(ARGV[1]), 'Requested permits amount cannot exceed defined rate')
local nowArg = ARGV[2]
if nowArg == '' then
  local t = redis.call('time')
  nowArg = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
local now = tonumber(nowArg)
local result = nil
local current = redis.call('get', valueName)
if current == false then
  redis.call('set', valueName, rate)
  redis.call('zadd', permitsName, nowArg, struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], ARGV[1]))
  redis.call('decrby', valueName, ARGV[1])
else
  local horizon = now - tonumber(interval) -- a grant scored here is given back
  local expired = redis.call('zrangebyscore', permitsName, 0, horizon)
  local released = 0
  for _, v in ipairs(expired) do
    local _, p = struct.unpack('Bc0I', v)
    released = released + p
  end
  if released > 0 then
    redis.call('zremrangebyscore', permitsName, 0, horizon)
    if tonumber(current) + released > tonumber(rate) then
      local live = 0
      for _, v in ipairs(redis.call('zrange', permitsName, 0, -1)) do
        local _, p = struct.unpack('Bc0I', v)
        live = live + p
      end
      current = tonumber(rate) - live
      redis.call('set', valueName, current)
    else
      current = redis.call('incrby', valueName, released)
    end
  end
  if tonumber(current) < tonumber(ARGV[1]) then
    local oldest = redis.call('zrange', permitsName, 0, 0, 'withscores')
    result = 3 + tonumber(interval) - (now - tonumber(oldest[2]))
  else
    redis.call('zadd', permitsName, nowArg, struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], ARGV[1]))
    redis.call('decrby', valueName, ARGV[1])
  end
end
if keepAlive > 0 then
  redis.call('pexpire', KEYS[1], keepAlive)
  redis.call('pexpire', valueName, keepAlive)
  redis.call('pexpire', permitsName, keepAlive)
else
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', valueName, ttl)
    redis.call('pexpire', permitsName, ttl)
  end
end
return result
