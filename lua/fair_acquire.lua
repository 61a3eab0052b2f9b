-- fair_acquire: one attempt to take a hold of a fair lock (Redisson
-- RFairLock layout) for one owner. The lock is the lock's hash (field
-- <owner> = hold count, TTL = lease); waiting owners wait in the queue list
-- in arrival order, each scored in the timeouts zset with the server time
-- (epoch ms) by which it must try again or be dropped as dead.
--
-- First the dead waiters at the head of the queue are dropped. Then the
-- owner takes the lock if it already holds it (reentrant: never queued), or
-- if the lock is free and the queue is empty or starts with the owner (which
-- then leaves the queue and the zset). Otherwise the owner joins the queue
-- at its end, once, and its deadline becomes now + the waiter timeout: every
-- attempt of a live waiter refreshes it, so only waiters whose process died
-- are ever dropped. When dead waiters were dropped and the lock is free, the
-- new head (if not this owner) is told on its channel. The count is set to
-- what the client says (its own count is the authority), never added to
-- what Redis has. Retry-safe: the result of a successful attempt is recorded
-- under the request key, and a re-sent request returns the record.
--
-- KEYS[1]  lock: lock hash (the lock's name)
-- KEYS[2]  queue: queue list (redisson_lock_queue:{name})
-- KEYS[3]  timeouts: timeouts zset (redisson_lock_timeout:{name})
-- KEYS[4]  channelPrefix: channel prefix (redisson_lock__channel:{name}); an owner's channel
--          is KEYS[4] .. ':' .. owner
-- KEYS[5]  request: request key of this acquisition
-- KEYS[6]  counter: fencing counter (read only when ARGV[4] == "1")
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  field string: owner field "<client id>:<token>", which is also its queue entry
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  fenced bool: "1" for a fenced lock: an acquisition that starts the hold
--          (ARGV[5] == 1) takes a fencing token (next_token: INCR of KEYS[6], raised to the server clock), a
--          re-entry keeps the hold's (ARGV[8]); "0" not fenced
-- ARGV[5]  count int64: the owner's hold count once acquired, as the client counts it
-- ARGV[6]  waiterTimeoutMillis int64: waiter timeout in milliseconds: how long a queued owner's entry
--          outlives this attempt
-- ARGV[7]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[8]  fence int64: in a re-entry (ARGV[5] > 1), the hold's fencing token (0 for a
--          hold without one), recorded and returned; ignored otherwise
--
-- Returns {1, hold count, fencing token (0 without fencing; the hold's for
--                 a re-entry)} when acquired;
--         {0, hint} when queued: hint is the lock's PTTL for the head of the
--                 queue, the head's remaining deadline (ms) for the second
--                 in line, -1 otherwise (no hint);
--         {0, -3} when this request was cancelled (fair_release undo) first;
--         {-2, 0} when a reentrant acquisition (count > 1) finds the owner's
--                 hold gone (lost): the owner is not queued.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when a fenced acquisition that would start a hold finds the
--         fencing counter KEYS[6] holding another type than an integer
--         string: checked first, so nothing changed (no waiter dropped, no
--         queue entry).
--
-- Reply    {code, value, [fence]}
-- Code     Acquired = 1: the hold was taken; Value is the hold count
-- Code     Queued = 0: the owner waits in the queue; Value is the retry hint, or Cancelled
-- Code     Lost = -2: a re-entry found the owner's hold gone
-- Code     Cancelled = -3: Value when this request was cancelled first
-- Code     NoHint = -1: Value when the queued owner gets no retry hint

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[7] or '') ~= '' and KEYS[4] and not redis.acl_check_cmd(ARGV[7], KEYS[4] .. ':', '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[7] .. ' to ' .. KEYS[4] .. ':' .. ': nothing was changed')
end
local replay = fenced_replay(KEYS[5], ARGV[3])
if replay then
  return replay
end
local owner = ARGV[2]
local count = ARGV[5] + 0
if redis.call('hexists', KEYS[1], owner) == 0 then
  -- before the queue is touched: a hash of another layout is no lock
  lock_layout(KEYS[1], false)
end
if count == 1 and ARGV[4] == '1' then
  number_at(KEYS[6]) -- before any write: take_hold's INCR comes after the queue's changes
end
local now = fair_now()
local pruned = fair_prune(KEYS[2], KEYS[3], now)
local free = redis.call('exists', KEYS[1]) == 0
local take = false
if free then
  if count == 1 then
    local head = redis.call('lindex', KEYS[2], '0')
    take = (not head) or head == owner
  end
elseif redis.call('hexists', KEYS[1], owner) == 1 then
  -- a reentrant acquisition, or a count left by this owner's release whose
  -- reply was lost: either way the owner holds it in Redis
  take = true
end
if take then
  if redis.call('zscore', KEYS[3], owner) then
    redis.call('lrem', KEYS[2], 1, owner)
    redis.call('zrem', KEYS[3], owner)
  end
  return take_hold(KEYS[1], owner, count, ARGV[1], ARGV[4], KEYS[6], KEYS[5], ARGV[3], ARGV[8])
end
if pruned and free then
  fair_notify(KEYS[2], KEYS[4], ARGV[7])
end
if count > 1 then
  return {-2, 0}
end
local pos = redis.call('lpos', KEYS[2], owner)
if not pos then
  pos = redis.call('rpush', KEYS[2], owner) - 1
end
redis.call('zadd', KEYS[3], now + ARGV[6], owner)
local hint = -1
if pos == 0 then
  hint = redis.call('pttl', KEYS[1])
elseif pos == 1 then
  local deadline = redis.call('zscore', KEYS[3], redis.call('lindex', KEYS[2], '0'))
  if deadline then
    hint = math.max(tonumber(deadline) - now, 0)
  end
end
return {0, hint}
