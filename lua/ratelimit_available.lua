-- ratelimit_available: the permits a rate limiter has left now for this
-- client (OVERALL: for everyone), after dropping the grants older than the
-- interval, by the Redis server's clock. Never above the rate (Redisson
-- 3.52's availablePermits can be, #7329): a value found above it is set
-- back to what the live grants leave. For PER_CLIENT it creates this
-- client's value key, so it registers the client and keeps the keys alive
-- as ratelimit_acquire does. Safe to re-run.
--
-- KEYS[1]  limiter: limiter (its name): the configuration hash
-- KEYS[2]  value: OVERALL value: permits left
-- KEYS[3]  permits: OVERALL permits: zset of grants
-- KEYS[4]  clientValue: this client's PER_CLIENT value
-- KEYS[5]  clientPermits: this client's PER_CLIENT permits
-- KEYS[6]  clients: registry: set of the ids of the clients with PER_CLIENT keys
-- ARGV[1]  clientID string: this client's id, added to the registry for PER_CLIENT
--
-- Returns {1, left} with the permits left; {-2, 0} when no rate is set.
--
-- Reply    {code, left}
-- Code     Set = 1: Left is the permits left
-- Code     NoRate = -2: no rate is set
local cfg = rl_config(KEYS[1])
if not cfg then
  return {-2, 0}
end
local value, zset, registry = rl_budget(cfg, KEYS)
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local left = rl_settle(value, zset, cfg.rate, cfg.interval, now)
rl_join(registry, ARGV[1])
rl_keep(KEYS[1], cfg.keepalive, value, zset, registry)
return {1, left}
