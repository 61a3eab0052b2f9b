-- ratelimit_delete: delete a rate limiter: its configuration, its OVERALL
-- keys, the PER_CLIENT keys of every client in the registry and the
-- registry. (Redisson's PER_CLIENT keys of a Java client that never used a
-- redisync script are not in the registry; they expire with keepAliveTime.)
-- Retry-safe: the result is recorded under the request key.
--
-- KEYS[1]  limiter: limiter (its name): the configuration hash
-- KEYS[2]  value: OVERALL value: permits left
-- KEYS[3]  permits: OVERALL permits: zset of grants
-- KEYS[4]  clientValuePrefix: prefix of the PER_CLIENT values ("{name}:value:"), the client id appended
-- KEYS[5]  clientPermitsPrefix: prefix of the PER_CLIENT permits ("{name}:permits:"), the client id appended
-- KEYS[6]  clients: registry: set of the ids of the clients with PER_CLIENT keys
-- KEYS[7]  request: request key of this call
-- ARGV[1]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[2]  clientID string: this client's id (its keys are deleted even if not registered)
--
-- Returns 1 when any key existed; 0 otherwise. A key of the limiter's
-- that holds another type than its layout's (KEYS[1] a hash, KEYS[2] a
-- string, KEYS[3] a zset, KEYS[6] a set) fails the call with
-- REDISYNC_WRONGTYPE, deleting nothing.
--
-- Reply    existed
-- Code     Existed = 1: any key existed
local done = count_replay(KEYS[7], ARGV[1])
if done then
  return done
end
for i, want in pairs({[1] = 'hash', [2] = 'string', [3] = 'zset', [6] = 'set'}) do
  local got = redis.call('type', KEYS[i])['ok']
  if got ~= 'none' and got ~= want then
    error({err = 'REDISYNC_WRONGTYPE key ' .. KEYS[i] .. ' holds a ' .. got .. ', not a rate limiter\'s ' .. want})
  end
end
local ids = redis.call('smembers', KEYS[6])
table.insert(ids, ARGV[2])
local n = redis.call('del', KEYS[1], KEYS[2], KEYS[3], KEYS[6])
for _, id in ipairs(ids) do
  n = n + redis.call('del', KEYS[4] .. id, KEYS[5] .. id)
end
local r = 0
if n > 0 then
  r = 1
end
record(KEYS[7], tostring(r), ARGV[1])
return r
