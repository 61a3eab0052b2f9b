-- election_proclaim: record what the leader of an election proclaims, for
-- as long as it leads. The leader is the owner holding the election's lock
-- (a fenced lock in Redisson's layout on the election's name); its term is
-- the fencing token its acquisition took. The record is written only while
-- the owner's field is in the lock hash, and never over a later term's
-- record, so a leader that lost the lock (its lease ran out, a pause, a
-- partition) cannot overwrite a newer leader's value. Each record gets the
-- next sequence number, is pushed on the log (newest first, at most ARGV[5]
-- entries) and its number is published on the election's channel, where
-- observers are woken; they read the record, and the log when they missed
-- some. "since" is when the term was first recorded, by the server's clock;
-- a re-proclaim in the same term keeps it. The first record (none before,
-- or the records were deleted or lost with their server) is numbered with
-- its since, the server's clock in milliseconds, so that a sequence begun
-- again runs above the one before and observers take its records for new
-- ones.
--
-- KEYS[1]  lock: the election's lock hash (its name)
-- KEYS[2]  leader: the leader hash ({name}:leader): term, since, value, owner, seq
-- KEYS[3]  log: the latest records ({name}:leaders), newest first, each
--          "<seq>:<term>:<since>:<value>"
-- KEYS[4]  channel: the election's channel (redisync_election:{name})
-- ARGV[1]  field string: the leader's owner field in the lock hash
-- ARGV[2]  term int64: the leadership's term (its fencing token)
-- ARGV[3]  value string: what the leader proclaims
-- ARGV[4]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[5]  keep int64: how many records the log keeps (at least 1)
--
-- Returns {1, seq, since} when recorded; {-1, 0, 0} when the owner does not
-- hold the lock; {-2, 0, 0} when a later term is recorded. Nothing changed
-- in the last two cases. A key of another type fails the script before any
-- write (WRONGTYPE).
--
-- Reply    {code, seq, since}
-- Code     Recorded = 1: the record was written
-- Code     NotLeader = -1: the owner does not hold the lock
-- Code     Stale = -2: a later term is recorded

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and ARGV[4] ~= '' and not redis.acl_check_cmd(ARGV[4], KEYS[4], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[4] .. ' to ' .. KEYS[4] .. ': nothing was changed')
end
redis.call('llen', KEYS[3]) -- a log of another type fails here, before any write
local cur = redis.call('hmget', KEYS[2], 'term', 'since', 'seq')
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return {-1, 0, 0}
end
local term = tonumber(ARGV[2])
if cur[1] and tonumber(cur[1]) > term then
  return {-2, 0, 0}
end
local since = cur[2]
if not (cur[1] and tonumber(cur[1]) == term and since) then
  local t = redis.call('time')
  since = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
end
local seq = since -- the first record: see the header
if cur[3] then
  seq = string.format('%.0f', tonumber(cur[3]) + 1)
end
redis.call('hset', KEYS[2], 'term', ARGV[2], 'since', since, 'value', ARGV[3], 'owner', ARGV[1], 'seq', seq)
redis.call('lpush', KEYS[3], seq .. ':' .. ARGV[2] .. ':' .. since .. ':' .. ARGV[3])
redis.call('ltrim', KEYS[3], 0, tonumber(ARGV[5]) - 1)
redis.call(ARGV[4], KEYS[4], seq)
return {1, tonumber(seq), tonumber(since)}
