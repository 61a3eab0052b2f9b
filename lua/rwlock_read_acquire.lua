-- rwlock_read_acquire: take one read hold of a read-write lock (Redisson
-- RReadWriteLock layout) for one owner. The lock is a hash: field "mode" is
-- "read" or "write", a reader's field <owner> holds its read hold count, the
-- writer's field <owner>:write its write hold count. Each read hold n also
-- has a string key <timeout prefix>:n with its own PEXPIRE = lease, and the
-- hash's TTL is at least the longest of them. A read hold is granted when
-- the lock is free, read-locked, or write-locked by this same owner
-- (downgrade). The owner's count is set to what the client says, never
-- added to what Redis has: holds Redis keeps beyond it (left by a release
-- whose reply was lost) are dropped. A reader field none of whose timeout
-- keys is alive counts as no hold. Retry-safe: the result is recorded under
-- the request key, and a re-sent request returns the record.
--
-- KEYS[1]  lock: lock hash (the lock's name)
-- KEYS[2]  request: request key of this acquisition
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  field string: owner field "<client id>:<token>"
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  writeField string: the owner's write field "<owner>:write"
-- ARGV[5]  timeoutPrefix string: the owner's timeout key prefix ({name}:<owner>:rwlock_timeout);
--          hold n's key is ARGV[5] .. ':' .. n
-- ARGV[6]  count int64: the owner's read hold count once acquired, as the client counts it
--
-- Returns {1, read hold count} when acquired;
--         {0, pttl} when another owner holds the write lock, or the key is
--                   not a read-write lock (pttl -1: no expiry);
--         {0, -3} when this request was cancelled (undo) first;
--         {-2, 0} when a reentrant acquisition (count > 1) finds the owner's
--                 read holds gone (lost): nothing changed.
--
-- Reply    {code, value}
-- Code     Acquired = 1: Value is the read hold count
-- Code     Busy = 0: Value is the PTTL, or Cancelled
-- Code     Lost = -2: a re-entry found the owner's read holds gone
-- Code     Cancelled = -3: Value when this request was cancelled first
local replay = acquire_replay(KEYS[2], ARGV[3])
if replay then
  return replay
end
local hash, lease, prefix = KEYS[1], (ARGV[1] + 0), ARGV[5]
local count = ARGV[6] + 0
local stored = tonumber(redis.call('hget', hash, ARGV[2]) or '0')
if count > 1 and not live(prefix, stored) then
  return {-2, 0}
end
local fresh = redis.call('exists', hash) == 0
if fresh then
  -- a new hash: stored is 0, and its lease is this hold's
  redis.call('hset', hash, 'mode', 'read', ARGV[2], count)
  redis.call('pexpire', hash, lease)
else
  local mode = redis.call('hget', hash, 'mode')
  if not mode then
    lock_layout(hash, true) -- a hash without a mode field is no read-write lock
  end
  if not (mode == 'read' or (mode == 'write' and redis.call('hexists', hash, ARGV[4]) == 1)) then
    lock_layout(hash, true) -- busy only with a read-write lock
    return {0, redis.call('pttl', hash)}
  end
  redis.call('hset', hash, ARGV[2], count)
end
for i = count + 1, stored do
  redis.call('del', prefix .. ':' .. i)
end
redis.call('set', prefix .. ':' .. count, '1', 'px', lease)
if not fresh and redis.call('pttl', hash) < lease then
  redis.call('pexpire', hash, lease)
end
record(KEYS[2], count, ARGV[3])
return {1, count}
