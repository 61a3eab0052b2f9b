-- latch_delete: delete a count-down latch whatever its count (Redisson
-- RCountDownLatch layout). A deleted latch is open: ARGV[2] ("1") is
-- published on the latch channel so its waiters re-check. Retry-safe: the
-- result is recorded under the request key, and a re-sent request returns
-- the record (a re-run of a delete that succeeded still reports 1, and does
-- not delete a latch set anew in between).
--
-- KEYS[1]  latch: latch counter (the latch's name)
-- KEYS[2]  request: request key of this call
-- KEYS[3]  channel?: latch channel, when it shares KEYS[1]'s cluster slot (else absent)
-- ARGV[1]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[2]  message string: message published when the latch was deleted ("1")
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster; "" to publish nothing (the caller publishes:
--          SPUBLISH must run on the node of the channel's slot, which for
--          a channel outside KEYS[1]'s slot a script cannot reach)
-- ARGV[4]  channelArg? string: latch channel, only when it is not KEYS[3] (see
--          latch_try_set_count.lua)
--
-- Returns 1 when the latch existed, 0 otherwise.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    existed
-- Code     Existed = 1: the latch existed

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and (KEYS[3] or ARGV[4]) and not redis.acl_check_cmd(ARGV[3], (KEYS[3] or ARGV[4]), '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. (KEYS[3] or ARGV[4]) .. ': nothing was changed')
end
local replay = count_replay(KEYS[2], ARGV[1])
if replay then
  return replay
end
number_at(KEYS[1])
local res = redis.call('del', KEYS[1])
if res == 1 and ARGV[3] ~= '' then
  redis.call(ARGV[3], KEYS[3] or ARGV[4], ARGV[2])
end
record(KEYS[2], res, ARGV[1])
return res
