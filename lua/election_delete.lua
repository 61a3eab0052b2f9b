-- election_delete: delete every key of an election (package election): its
-- leader record and log, the fair lock's queue and timeouts zset, the
-- fencing counter, and, when forced, the lock itself. Without force it
-- refuses, changing nothing, while the lock is held: by the leader, or by
-- an owner that is no candidate (a Redisson RLock on the name). When forced
-- it deletes a held lock as a force unlock does: the request keys of fresh
-- holds are marked first (cancel_holds), and the holder finds its hold gone
-- at its next renewal. The first live candidate in the queue (its deadline
-- not passed) is told on its channel, so that it campaigns again at once
-- and leads; the others re-check within a third of their waiter timeout.
-- Observers are told on the election's channel when anything was deleted.
-- Every key is checked for its type before anything is written: a key of
-- another type fails the script (WRONGTYPE, REDISYNC_WRONGTYPE) with
-- nothing changed. Repeating it deletes nothing more.
--
-- KEYS[1]  lock: the election's lock hash (its name)
-- KEYS[2]  leader: the leader record hash ({name}:leader)
-- KEYS[3]  log: the records' log list ({name}:leaders)
-- KEYS[4]  queue: the candidates' queue list (redisson_lock_queue:{name})
-- KEYS[5]  timeouts: the candidates' deadlines zset (redisson_lock_timeout:{name})
-- KEYS[6]  counter: the fencing counter (redisson_lock_token:{name})
-- KEYS[7]  channelPrefix: the candidates' channel prefix (redisson_lock__channel:{name}); a
--          candidate's channel is KEYS[7] .. ':' .. owner
-- KEYS[8]  channel: the election's channel (redisync_election:{name})
-- ARGV[1]  force bool: "1": delete the lock too, whoever holds it
-- ARGV[2]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock: a copy delivered
--          after it is refused (REDISYNC_LATE) and changes nothing
-- ARGV[4]  requestPrefix string: prefix of the request keys of fresh holds (lock_force_unlock's
--          ARGV[4])
-- ARGV[5]  markTTLMillis int64: how long their marks live, in milliseconds (lock_force_unlock's
--          ARGV[5])
--
-- Returns {1, holder} when any key existed and all were deleted (holder:
-- the owner field that held the lock, '' when it was free); {0, ''} when
-- none existed; {-1, holder} when the lock is held and force is not set:
-- nothing changed.
--
-- Reply    {code, holder string}
-- Code     Deleted = 1: the election's keys were deleted
-- Code     Absent = 0: no key of the election existed
-- Code     Held = -1: the lock is held and force is not set: nothing changed

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and ARGV[2] ~= '' then
  for _, ch in ipairs({KEYS[7] .. ':', KEYS[8]}) do
    if not redis.acl_check_cmd(ARGV[2], ch, '0') then
      return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[2] .. ' to ' .. ch .. ': nothing was changed')
    end
  end
end
refuse_late(ARGV[3])
local held = lock_exists(KEYS[1])
local layout = {{KEYS[2], 'hash'}, {KEYS[3], 'list'}, {KEYS[4], 'list'}, {KEYS[5], 'zset'}, {KEYS[6], 'string'}}
for _, kt in ipairs(layout) do
  local t = redis.call('type', kt[1])['ok']
  if t ~= 'none' and t ~= kt[2] then
    error({err = 'REDISYNC_WRONGTYPE key ' .. kt[1] .. ' holds a ' .. t .. ', not a ' .. kt[2] .. ': nothing deleted'})
  end
end
local holder = ''
if held then
  holder = redis.call('hkeys', KEYS[1])[1]
  if ARGV[1] ~= '1' then
    return {-1, holder}
  end
end
local now = fair_now()
local head = false
for _, owner in ipairs(redis.call('lrange', KEYS[4], 0, -1)) do
  local deadline = redis.call('zscore', KEYS[5], owner)
  if deadline and tonumber(deadline) > now then
    head = owner
    break
  end
end
if held then
  cancel_holds(KEYS[1], ARGV[4], ARGV[5])
end
local deleted = redis.call('del', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
if head then
  redis.call(ARGV[2], KEYS[7] .. ':' .. head, '0')
end
if deleted == 0 then
  return {0, ''}
end
redis.call(ARGV[2], KEYS[8], '0')
return {1, holder}
