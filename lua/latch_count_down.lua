-- latch_count_down: count a count-down latch down by one (Redisson
-- RCountDownLatch layout). When the count reaches zero the counter is
-- deleted, so it never goes below zero and an absent latch counts as open,
-- and ARGV[2] ("0") is published on the latch channel. A latch that is not
-- set is left alone (no key is created). Retry-safe: the result is recorded
-- under the request key, and a re-sent request returns the record instead of
-- counting again (also when the latch was set anew in between).
--
-- KEYS[1]  latch: latch counter (the latch's name)
-- KEYS[2]  request: request key of this call
-- KEYS[3]  channel?: latch channel, when it shares KEYS[1]'s cluster slot (else absent)
-- ARGV[1]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[2]  message string: message published when the count reaches zero ("0")
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster; "" to publish nothing (the caller publishes:
--          SPUBLISH must run on the node of the channel's slot, which for
--          a channel outside KEYS[1]'s slot a script cannot reach)
-- ARGV[4]  channelArg? string: latch channel, only when it is not KEYS[3] (see
--          latch_try_set_count.lua)
--
-- Returns the count left (0: the latch opened, or was open already when a
-- stored count was not positive); -1 when the latch was not set (nothing
-- changed).
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    left
-- Code     Opened = 0: the latch opened, or was open
-- Code     NotSet = -1: the latch was not set

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and (KEYS[3] or ARGV[4]) and not redis.acl_check_cmd(ARGV[3], (KEYS[3] or ARGV[4]), '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. (KEYS[3] or ARGV[4]) .. ': nothing was changed')
end
local replay = count_replay(KEYS[2], ARGV[1])
if replay then
  return replay
end
local res = -1
if redis.call('exists', KEYS[1]) == 1 then
  res = redis.call('decr', KEYS[1])
  if res <= 0 then
    res = 0
    redis.call('del', KEYS[1])
    if ARGV[3] ~= '' then
      redis.call(ARGV[3], KEYS[3] or ARGV[4], ARGV[2])
    end
  end
end
record(KEYS[2], res, ARGV[1])
return res
