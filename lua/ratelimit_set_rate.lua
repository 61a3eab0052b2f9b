-- ratelimit_set_rate: set a rate limiter's configuration (Redisson's four
-- hash fields, always all four, keepAliveTime 0 when unset). Mode "try"
-- sets it only if no type is set yet (Redisson's trySetRate) and leaves
-- the state alone. Mode "set" replaces it and deletes the state: the
-- OVERALL keys and the PER_CLIENT keys of every registered client and of
-- this one (Redisson 3.52 deletes this client's only). Mode "update"
-- replaces an existing configuration and keeps the grants in use
-- (Redisson 4.4's keepState): it drops the grants older than the new
-- interval and sets each value to the new rate minus the live grants
-- (the PER_CLIENT budgets it keeps stay registered, this client's too).
-- The hash expires after keepAliveTime when it is above 0, and never
-- otherwise. Retry-safe: the result is recorded under the request key.
--
-- KEYS[1]  limiter: limiter (its name): the configuration hash
-- KEYS[2]  value: OVERALL value: permits left
-- KEYS[3]  permits: OVERALL permits: zset of grants
-- KEYS[4]  clientValuePrefix: prefix of the PER_CLIENT values ("{name}:value:"), the client id appended
-- KEYS[5]  clientPermitsPrefix: prefix of the PER_CLIENT permits ("{name}:permits:"), the client id appended
-- KEYS[6]  clients: registry: set of the ids of the clients with PER_CLIENT keys
-- KEYS[7]  request: request key of this call
-- ARGV[1]  mode string: mode: "try", "set" or "update"
-- ARGV[2]  rateType int64: type: 0 OVERALL, 1 PER_CLIENT
-- ARGV[3]  rate int64: rate (> 0)
-- ARGV[4]  intervalMillis int64: interval in ms (> 0)
-- ARGV[5]  keepAliveMillis int64: keepAliveTime in ms (0: the keys never expire)
-- ARGV[6]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[7]  clientID string: this client's id
--
-- Returns 1 when the configuration was set; 0 when it was not ("try": a
--         type was set already; "update": no configuration exists).
--
-- Reply    set
-- Code     Set = 1: the configuration was set
-- Code     NotSet = 0: it was not
local done = count_replay(KEYS[7], ARGV[6])
if done then
  return done
end
local mode = ARGV[1]
local function finish(r)
  record(KEYS[7], tostring(r), ARGV[6])
  return r
end
local keepalive = ARGV[5] + 0
if mode == 'try' then
  local r = redis.call('hsetnx', KEYS[1], 'type', ARGV[2])
  redis.call('hsetnx', KEYS[1], 'rate', ARGV[3])
  redis.call('hsetnx', KEYS[1], 'interval', ARGV[4])
  redis.call('hsetnx', KEYS[1], 'keepAliveTime', ARGV[5])
  if r == 1 and keepalive > 0 then
    redis.call('pexpire', KEYS[1], ARGV[5])
  end
  return finish(r)
end
if mode == 'update' and redis.call('exists', KEYS[1]) == 0 then
  return finish(0)
end
redis.call('hset', KEYS[1], 'rate', ARGV[3], 'interval', ARGV[4], 'type', ARGV[2], 'keepAliveTime', ARGV[5])
if keepalive > 0 then
  redis.call('pexpire', KEYS[1], ARGV[5])
else
  redis.call('persist', KEYS[1])
end
local ids = redis.call('smembers', KEYS[6])
table.insert(ids, ARGV[7])
if mode == 'set' then
  redis.call('del', KEYS[2], KEYS[3], KEYS[6])
  for _, id in ipairs(ids) do
    redis.call('del', KEYS[4] .. id, KEYS[5] .. id)
  end
  return finish(1)
end
-- update: keep the grants in use, for the new type's keys.
local rate, interval = (ARGV[3] + 0), (ARGV[4] + 0)
local now = request_now
local pairs_ = {{KEYS[2], KEYS[3]}}
if ARGV[2] == '1' then
  pairs_ = {}
  for _, id in ipairs(ids) do
    table.insert(pairs_, {KEYS[4] .. id, KEYS[5] .. id, id})
  end
end
for _, p in ipairs(pairs_) do
  if redis.call('exists', p[1], p[2]) > 0 then
    rl_recount(p[1], p[2], rate, interval, now)
    if p[3] then
      -- rl_recount may create the value key: registered, as rl_join does.
      redis.call('sadd', KEYS[6], p[3])
    end
    rl_keep(KEYS[1], keepalive, p[1], p[2], p[3] and KEYS[6])
  end
end
return finish(1)
