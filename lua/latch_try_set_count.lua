-- latch_try_set_count: set a count-down latch's count, only when the latch
-- is not set (Redisson RCountDownLatch layout: a string key holding the
-- count, absent when the latch is open). Setting publishes ARGV[3] ("1") on
-- the latch channel. Retry-safe: the result is recorded under the request
-- key, and a re-sent request returns the record, so a re-run of a set that
-- succeeded still reports 1.
--
-- KEYS[1]  latch: latch counter (the latch's name)
-- KEYS[2]  request: request key of this call
-- KEYS[3]  channel?: latch channel, when it shares KEYS[1]'s cluster slot (else absent)
-- ARGV[1]  count int64: the count (a positive integer)
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  message string: message published when the count was set ("1")
-- ARGV[4]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster; "" to publish nothing (the caller publishes:
--          SPUBLISH must run on the node of the channel's slot, which for
--          a channel outside KEYS[1]'s slot a script cannot reach)
-- ARGV[5]  channelArg? string: latch channel, only when it is not KEYS[3]: Redisson's latch
--          channel may hash to another slot than the counter, and PUBLISH
--          needs no declared key
--
-- Returns 1 when the count was set, 0 when the latch was already set.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    set
-- Code     Set = 1: the count was set
-- Code     AlreadySet = 0: the latch was already set

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[4] or '') ~= '' and (KEYS[3] or ARGV[5]) and not redis.acl_check_cmd(ARGV[4], (KEYS[3] or ARGV[5]), '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[4] .. ' to ' .. (KEYS[3] or ARGV[5]) .. ': nothing was changed')
end
local replay = count_replay(KEYS[2], ARGV[2])
if replay then
  return replay
end
local res = 0
local current = redis.call('get', KEYS[1]) -- WRONGTYPE when not a string
if current and not tonumber(current) then
  wrong_type(KEYS[1])
end
if not current then
  redis.call('set', KEYS[1], ARGV[1])
  if ARGV[4] ~= '' then
    redis.call(ARGV[4], KEYS[3] or ARGV[5], ARGV[3])
  end
  res = 1
end
record(KEYS[2], res, ARGV[2])
return res
