-- ratelimit_release: give n permits of a rate limiter back now, or undo an
-- acquisition whose reply was lost. A release takes the newest grants
-- holding n permits out of the log (splitting one if needed) and adds n to
-- the value, at most up to the rate: the released permits are not counted
-- a second time when those grants would have expired (Redisson 3.52 keeps
-- them and then throws permits away on its recount, #7342). An undo removes
-- the acquisition's own grant. For PER_CLIENT it may create this client's
-- value key, so it registers the client and keeps the keys alive as
-- ratelimit_acquire does. Retry-safe: the result is recorded under the
-- request key.
--
-- KEYS[1]  limiter: limiter (its name): the configuration hash
-- KEYS[2]  value: OVERALL value: permits left
-- KEYS[3]  permits: OVERALL permits: zset of grants
-- KEYS[4]  clientValue: this client's PER_CLIENT value
-- KEYS[5]  clientPermits: this client's PER_CLIENT permits
-- KEYS[6]  clients: registry: set of the ids of the clients with PER_CLIENT keys
-- KEYS[7]  request: request key of this release
-- KEYS[8]  undoRequest: request key of the acquisition to undo (undo mode; else KEYS[7] again)
-- ARGV[1]  n int64: n, the number of permits (> 0)
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  undo bool: "1" to undo the acquisition KEYS[8], "0" for a release
-- ARGV[4]  random string: undo mode: the 16 random bytes of the acquisition's grant
-- ARGV[5]  clientID string: this client's id, added to the registry for PER_CLIENT
--
-- Returns the permits left afterwards (≥ 0);
--         -2 for an undo of an acquisition that did not take place;
--         -3 for a release the client settled (its reply lost);
--         -4 when no rate is set (nothing changed).
--
-- Reply    left
-- Code     NotTaken = -2: an undo of an acquisition that did not take place
-- Code     Settled = -3: a release the client settled
-- Code     NoRate = -4: no rate is set
local done = release_replay(KEYS[7], KEYS[8], ARGV[3], ARGV[2])
if done then
  return done
end
local cfg = rl_config(KEYS[1])
if not cfg then
  if ARGV[3] == '1' then
    return -2 -- deleted meanwhile: nothing to give back
  end
  return -4
end
local n = ARGV[1] + 0
local value, zset, registry = rl_budget(cfg, KEYS)
local now = request_now
local left = rl_settle(value, zset, cfg.rate, cfg.interval, now)
rl_join(registry, ARGV[5])
if ARGV[3] == '1' then
  if redis.call('zrem', zset, rl_pack(ARGV[4], n)) == 0 then
    n = 0 -- its grant is no longer live: nothing to give back
  end
else
  local take = n
  while take > 0 do
    local newest = redis.call('zrange', zset, -1, -1, 'withscores')
    if #newest == 0 then
      break
    end
    local p = rl_permits(newest[1])
    redis.call('zrem', zset, newest[1])
    if p > take then
      redis.call('zadd', zset, newest[2], rl_pack(string.sub(newest[1], 2, 17), p - take))
      take = 0
    else
      take = take - p
    end
  end
end
left = math.min(left + n, cfg.rate)
redis.call('set', value, rl_fmt(left))
rl_keep(KEYS[1], cfg.keepalive, value, zset, registry)
record(KEYS[7], rl_fmt(left), ARGV[2])
return left
