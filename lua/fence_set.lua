-- fence_set: write a fenced value (package fence): the hash KEYS[1] keeps
-- the value and the highest fencing token that wrote it, so that a write
-- with a lower token (a holder whose lock expired and was taken by another)
-- is refused and changes nothing. A write with the same token is taken (a
-- holder may write several times while it holds the lock).
--
-- KEYS[1]  fenced: fenced value hash (fields token and value)
-- ARGV[1]  token int64: the writer's fencing token (at least 1)
-- ARGV[2]  data string: the value to write
--
-- Returns 1 when written, 0 when refused (a higher token wrote before).
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE) when KEYS[1]
--         is not a fenced value's hash: nothing changed.
--
-- Reply    written
-- Code     Written = 1: the value was written
local fields = redis.call('hlen', KEYS[1]) -- WRONGTYPE when not a hash
local stored = redis.call('hget', KEYS[1], 'token')
local highest = tonumber(stored)
if fields > 0 and (fields > 2 or not highest or highest ~= math.floor(highest) or
    (fields == 2 and redis.call('hexists', KEYS[1], 'value') == 0)) then
  error({err = 'REDISYNC_WRONGTYPE key ' .. KEYS[1] .. ' is a hash that is not a fenced value (fields token and value): left unchanged'})
end
if highest and tonumber(ARGV[1]) < highest then
  return 0
end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return 1
