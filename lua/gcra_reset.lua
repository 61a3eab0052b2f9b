-- gcra_reset: bring a GCRA limiter back to a full burst by deleting its
-- key (the TAT). A key of another type (not a string, or a string that is
-- not a number) is left as it is, and the call fails with
-- REDISYNC_WRONGTYPE. Deleting twice deletes nothing more: it needs no
-- request record.
--
-- KEYS[1]  limiter: limiter (its name): the TAT, epoch µs
-- ARGV     none
--
-- Returns 1 when the key existed, 0 otherwise.
--
-- Reply    existed
-- Code     Existed = 1: the key existed
local got = redis.call('type', KEYS[1])['ok']
if got == 'none' then
  return 0
end
if got ~= 'string' or not tonumber(redis.call('get', KEYS[1])) then
  error({err = 'REDISYNC_WRONGTYPE key ' .. KEYS[1] .. ' holds a ' .. got .. ' that is not a GCRA arrival time'})
end
return redis.call('del', KEYS[1])
