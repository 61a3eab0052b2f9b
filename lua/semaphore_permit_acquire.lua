-- semaphore_permit_acquire: take n permits of a permit-expirable semaphore
-- (Redisson RPermitExpirableSemaphore layout), one id per permit, if n are
-- available. The semaphore is a string holding the available count; each
-- acquired permit is a member (its 16 raw id bytes) of the zset
-- {name}:timeout scored by its expiry in epoch milliseconds, or by
-- 922337203685477 when it never expires. Expired permits are first given
-- back to the available count, by the Redis server's clock, and published
-- when that leaves permits available. Retry-safe: the outcome is recorded
-- under the request key, a shortage too, and a re-sent request returns the
-- record: a copy held up in the network must not take permits after another
-- copy of the same request was answered "short".
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- KEYS[4]  request: request key of this acquisition
-- KEYS[5]  waiters?: the semaphore's queue of waiting Clients (prelude_wake), which the
--          counted semaphore of the name shares; with KEYS[6], when ARGV[4] is not ""
-- KEYS[6]  waitState?: the queue's state (prelude_wake)
-- ARGV[1]  leaseMillis int64: lease in milliseconds; ≤ 0: the permits never expire
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[4]  client string: the Client's id when it waits, listening on its own channel (with
--          KEYS[5]), else "": as semaphore_acquire's ARGV[5] (the queue, the chain)
-- ARGV[5]  aliveMillis int64: how long the Client counts as alive in the queue from now
--          (with ARGV[4])
-- ARGV[6]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id
--          (with ARGV[4])
-- ARGV[7]  probe bool: "1" where a publish counts every receiver (prelude_wake; with ARGV[4])
-- ARGV[8..]  permits string: the ids of the new permits, 16 raw bytes each; n = #ARGV - 7
--
-- Returns {1} when the permits were taken;
--         {0, available, ms until the nearest permit expiry (0: none
--             expires)} when fewer than n are available (nothing taken
--             but the queue); {2, ...} likewise when the Client (ARGV[4])
--             is the first in the queue: it listens on the channel too;
--         {-1} when this request was cancelled (semaphore_permit_release
--             undo) first.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    {code, [available], [expiryMillis]}
-- Code     Taken = 1: the permits were taken
-- Code     Short = 0: fewer are available
-- Code     ShortFirst = 2: fewer are available, and the Client is the first in the queue
-- Code     Cancelled = -1: this request was cancelled first

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[3], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
if ARGV[4] ~= '' then
  local denied = wait_denied(ARGV[3], ARGV[6])
  if denied then
    return denied
  end
end
local rec = recorded(KEYS[4])
if rec then
  if rec == 'cancelled' then
    return {-1}
  elseif rec == 'short' then
    return {0, 0, 0}
  end
  return {1}
end
refuse_late(ARGV[2])
local now, expired, _, available = reclaim(KEYS[1], KEYS[2])
local n = #ARGV - 7
local client = ARGV[4] ~= '' and ARGV[4]
if available >= n then
  local score = expiry(now, ARGV[1] + 0)
  for i = 8, #ARGV do
    redis.call('zadd', KEYS[2], score, ARGV[i])
  end
  local before = available
  available = redis.call('decrby', KEYS[1], n)
  record(KEYS[4], n, ARGV[2])
  if expired > 0 then
    announce(ARGV[3], KEYS[3], available)
  end
  if client and redis.call('exists', KEYS[5]) == 1 then
    local first = redis.call('zrange', KEYS[5], 0, 0)[1] == client
    wait_took(KEYS[5], KEYS[6], client, nil)
    if first or before > n then
      -- the next Client takes what is left, or learns it is first now
      wait_next(KEYS[5], KEYS[6], ARGV[6], ARGV[3], string.format('%d', available), ARGV[7], nil)
    end
  end
  return {1}
end
if expired > 0 then
  announce(ARGV[3], KEYS[3], available)
end
record(KEYS[4], 'short', ARGV[2])
local retry = 0
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] then
  local at = tonumber(first[2])
  if at < never then
    retry = at - now
  end
end
if client then
  local first = wait_join(KEYS[5], KEYS[6], client, ARGV[5], KEYS[1])
  if available > 0 then
    -- too few for this Client: the next one may need fewer
    wait_next(KEYS[5], KEYS[6], ARGV[6], ARGV[3], string.format('%d', available), ARGV[7], client)
  end
  if first == 1 then
    return {2, available, retry}
  end
end
return {0, available, retry}
