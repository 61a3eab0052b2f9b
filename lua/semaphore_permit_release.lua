-- semaphore_permit_release: give acquired permits of a permit-expirable
-- semaphore back, all or nothing, and publish the new available count; or
-- undo an acquisition whose reply never arrived. Expired permits are first
-- given back to the available count, by the Redis server's clock; an
-- expired permit can therefore not be released. Retry-safe through the
-- request key.
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  timeouts: zset {name}:timeout of acquired permit ids
-- KEYS[3]  channel: channel (redisson_sc:{name})
-- KEYS[4]  request: request key of this release
-- KEYS[5]  undoRequest: undo mode only: the request key of the acquisition to undo
-- KEYS[6]  waiters: the semaphore's queue of waiting Clients (prelude_wake)
-- KEYS[7]  waitState: the queue's state (prelude_wake)
--          (otherwise any key of the semaphore's slot; not touched)
-- ARGV[1]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[2]  undo bool: "1": undo mode. The acquisition's permits still held (its ids
--          found in the zset) are given back, whether or not its record
--          is still there (expired ones already were); either way it is
--          marked cancelled so that a late copy of it does nothing.
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[4]  wakePrefix string: the waiting Clients' channels (prelude_wake): a release that
--          gives permits back wakes the first live Client of the queue KEYS[6] (and
--          publishes on KEYS[3] when anybody listens there); "" to publish on KEYS[3] alone
-- ARGV[5]  probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[6..]  permits string: permit ids, 16 raw bytes each, all distinct
--
-- Returns {1, available permits afterwards} when released;
--         {0, i} when the i-th id (1-based) is unknown or expired: nothing
--             was released;
--         {-2} in undo mode when the acquisition never took place (or its
--             permits had all expired and its record too).
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    {code, [value]}
-- Code     Released = 1: Value is the available permits
-- Code     Unknown = 0: Value is the 1-based index of the unknown or expired id
-- Code     NotTaken = -2: in undo mode, the acquisition never took place

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and KEYS[3] and not redis.acl_check_cmd(ARGV[3], KEYS[3], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. KEYS[3] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[3], ARGV[4])
if denied then
  return denied
end
local rec = recorded(KEYS[4])
if rec then
  return {1, tonumber(rec)}
end
refuse_late(ARGV[1])
local _, expired, available, current = reclaim(KEYS[1], KEYS[2])
local function published(result)
  if expired > 0 then
    announce(ARGV[3], KEYS[3], available)
  end
  return result
end
local released = 0
if ARGV[2] == '1' then
  -- The ids are the acquisition's own (random, 128 bits): any of them in
  -- the zset was taken by it, even after its record has expired (an undo
  -- that reached Redis long after the acquisition ran). So the undo takes
  -- them back whatever the record says, and marks the acquisition
  -- cancelled in any case.
  local took = undo_allowed(KEYS[5], ARGV[1])
  for i = 6, #ARGV do
    released = released + redis.call('zrem', KEYS[2], ARGV[i])
  end
  if released == 0 and not took then
    return published({-2})
  end
else
  for i = 6, #ARGV do
    if not redis.call('zscore', KEYS[2], ARGV[i]) then
      return published({0, i - 5})
    end
  end
  for i = 6, #ARGV do
    redis.call('zrem', KEYS[2], ARGV[i])
  end
  released = #ARGV - 5
end
if released == 0 then
  available = current
  published(nil)
else
  available = redis.call('incrby', KEYS[1], released)
  wait_freed(KEYS[6], KEYS[7], ARGV[4], ARGV[3], KEYS[3], string.format('%d', available), ARGV[5], '', 0, KEYS[1])
end
record(KEYS[4], string.format('%d', available), ARGV[1])
return {1, available}
