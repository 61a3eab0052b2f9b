-- ratelimit_acquire: take n permits of a rate limiter (Redisson
-- RRateLimiter layout) if the last interval's grants leave that many, by
-- the Redis server's clock. The configuration hash decides whether the
-- OVERALL keys or this client's PER_CLIENT keys are used. A grant is a
-- member of the permits zset (see prelude_ratelimit) scored now. Unlike
-- Redisson 3.52 it never fails on an empty log, and a lost value key does
-- not refill the budget while grants live. Retry-safe: a grant is recorded
-- under the request key, and a re-sent request returns the record.
--
-- KEYS[1]  limiter: limiter (its name): the configuration hash
-- KEYS[2]  value: OVERALL value: permits left
-- KEYS[3]  permits: OVERALL permits: zset of grants
-- KEYS[4]  clientValue: this client's PER_CLIENT value
-- KEYS[5]  clientPermits: this client's PER_CLIENT permits
-- KEYS[6]  clients: registry: set of the ids of the clients with PER_CLIENT keys
-- KEYS[7]  request: request key of this acquisition
-- ARGV[1]  n int64: n, the number of permits (> 0)
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  random string: the 16 random bytes of the grant's member
-- ARGV[4]  clientID string: this client's id, added to the registry for PER_CLIENT
--
-- Returns {1, t} when the n permits were granted at t (epoch ms; the
--         record holds t, for a re-sent request);
--         {0, d} when fewer are left: they will be in d ms (≥ 1) unless
--         released sooner (nothing changed);
--         {-1, 0} when this request was cancelled (ratelimit_release undo)
--         first; {-2, 0} when no rate is set; {-3, rate} when n > rate.
--
-- Reply    {code, value}
-- Code     Granted = 1: Value is the grant's time, epoch ms
-- Code     Short = 0: Value is the delay in ms
-- Code     Cancelled = -1: this request was cancelled first
-- Code     NoRate = -2: no rate is set
-- Code     ExceedsRate = -3: Value is the rate
local rec = recorded(KEYS[7])
if rec then
  if rec == 'cancelled' then
    return {-1, 0}
  end
  return {1, tonumber(rec)}
end
refuse_late(ARGV[2])
local cfg = rl_config(KEYS[1])
if not cfg then
  return {-2, 0}
end
local n = ARGV[1] + 0
if n > cfg.rate then
  return {-3, cfg.rate}
end
local value, zset, registry = rl_budget(cfg, KEYS)
local now = request_now
local left = rl_settle(value, zset, cfg.rate, cfg.interval, now)
rl_join(registry, ARGV[4])
local delay
if left < n then
  delay = rl_delay(zset, n - left, cfg.interval, now)
  if not delay then
    -- The live grants cannot explain the shortfall: permits were lost
    -- (Redisson 3.52's recount after a release, or its nil-score state:
    -- an empty log with too few left). Restore them; the log is short.
    left = math.max(left, cfg.rate - rl_live(zset))
    redis.call('set', value, rl_fmt(left))
    if left < n then
      delay = rl_delay(zset, n - left, cfg.interval, now) or 1
    end
  end
end
local result
if left >= n then
  redis.call('zadd', zset, rl_fmt(now), rl_pack(ARGV[3], n))
  redis.call('set', value, rl_fmt(left - n))
  record(KEYS[7], rl_fmt(now), ARGV[2])
  result = {1, now}
else
  result = {0, delay}
end
rl_keep(KEYS[1], cfg.keepalive, value, zset, registry)
return result
