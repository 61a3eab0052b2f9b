-- rwlock_read_release: release one read hold of a read-write lock, or undo a
-- read acquisition whose reply never arrived. The owner's read count is set
-- to ARGV[8], the count the client has once the release took effect; the
-- timeout keys of holds above it are deleted and the remaining ones get a
-- full lease again. Then, unless the lock is write-locked (by this owner: a
-- downgrade in progress), the hash's TTL becomes the longest remaining lease
-- among the live read holds of every reader; reader fields with no live hold
-- left (their owner crashed or was paused past its lease) are removed, and
-- when no live read hold remains the hash is deleted and ARGV[4] is
-- published. Retry-safe through the request key.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  channel: lock channel (redisson_rwlock:{name})
-- KEYS[3]  request: request key of this release
-- KEYS[4]  undoRequest: undo mode only: the request key of the acquisition to undo
-- KEYS[5]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[6]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  leaseMillis int64: lease in milliseconds (re-set on the owner's remaining holds)
-- ARGV[2]  field string: owner field "<client id>:<token>"
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  message string: message published when the lock is freed ("0")
-- ARGV[5]  undo bool: "1": undo mode. The release happens only if the acquisition
--          KEYS[4] took place; if it has not, it is marked cancelled so that
--          a late copy of it does nothing.
-- ARGV[6]  timeoutHead string: head of the timeout key prefixes (see ARGV[7])
-- ARGV[7]  timeoutTail string: tail of the timeout key prefixes: reader r's n-th
--          hold's key is ARGV[6] .. r .. ARGV[7] .. ':' .. n
-- ARGV[8]  count int64: the owner's read hold count once released
-- ARGV[9]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
--
-- ARGV[10] wakePrefix string: the waiting Clients' channels: this prefix and a Client's id;
--          "" to publish ARGV[4] on KEYS[2] alone (prelude_wake's wait_freed)
-- ARGV[11] probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[12] stay string: the releasing Client's id when its own callers still wait for the
--          write side (it joins the queue before the wake-up), else ""
-- ARGV[13] aliveMillis int64: how long a Client joining the queue counts as alive
-- Returns the owner's remaining read hold count (0: it holds no read hold);
--         -1 when the owner holds no live read hold (nothing released; a
--            field left by its expired holds is removed);
--         -2 in undo mode when the acquisition never took place.
--
-- Reply    remaining
-- Code     NotHeld = -1: the owner holds no live read hold
-- Code     NotTaken = -2: in undo mode, the acquisition never took place

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[9] or '') ~= '' and KEYS[2] and not redis.acl_check_cmd(ARGV[9], KEYS[2], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[9] .. ' to ' .. KEYS[2] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[9], ARGV[10], KEYS[5], ARGV[12])
if denied then
  return denied
end
local replay = release_replay(KEYS[3], KEYS[4], ARGV[5], ARGV[3])
if replay then
  return replay
end

local hash, head, tail = KEYS[1], ARGV[6], ARGV[7]

-- settle sets the hash's TTL from the live read holds, dropping dead reader
-- fields, and frees the lock when none is left. A write-locked hash keeps
-- the writer's TTL, raised if a read hold of the writer outlives it.
local function settle()
  local mode = redis.call('hget', hash, 'mode')
  if mode ~= 'read' and mode ~= 'write' then
    return
  end
  local longest = readers(hash, head, tail)
  if mode == 'write' then
    if longest > redis.call('pttl', hash) then
      redis.call('pexpire', hash, longest)
    end
  elseif longest > 0 then
    redis.call('pexpire', hash, longest)
  else
    redis.call('del', hash)
    wait_freed(KEYS[5], KEYS[6], ARGV[10], ARGV[9], KEYS[2], ARGV[4], ARGV[11], ARGV[12], ARGV[13], hash)
  end
end

local v = redis.call('hget', hash, ARGV[2])
if not v then
  -- recorded: a copy delivered later, once the same owner reads again,
  -- replays this instead of releasing that new hold
  record(KEYS[3], -1, ARGV[3])
  return -1
end
local prefix = head .. ARGV[2] .. tail
local stored = tonumber(v)
if not live(prefix, stored) then
  redis.call('hdel', hash, ARGV[2])
  settle()
  record(KEYS[3], -1, ARGV[3])
  return -1
end
local count = ARGV[8] + 0
for i = count + 1, stored do
  redis.call('del', prefix .. ':' .. i)
end
if count > 0 then
  redis.call('hset', hash, ARGV[2], count)
  for i = 1, count do
    redis.call('set', prefix .. ':' .. i, '1', 'px', ARGV[1])
  end
else
  redis.call('hdel', hash, ARGV[2])
end
settle()
record(KEYS[3], count, ARGV[3])
return count
