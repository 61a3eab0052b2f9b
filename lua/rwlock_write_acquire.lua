-- rwlock_write_acquire: take one write hold of a read-write lock (Redisson
-- RReadWriteLock layout; see rwlock_read_acquire.lua) for one owner. Granted
-- when the lock is free, or write-locked by this owner (reentrant: the TTL
-- becomes the larger of what remains and the lease). The owner's count is
-- set to what the client says. An owner that holds live read holds but not
-- the write lock is refused at once (upgrade). Retry-safe through the
-- request key.
--
-- KEYS[1]  lock: lock hash (the lock's name)
-- KEYS[2]  request: request key of this acquisition
-- KEYS[3]  waiters?: the lock's queue of waiting Clients (prelude_wake); left out by an
--          attempt that does not wait in it (with KEYS[4] and ARGV[8], ARGV[9])
-- KEYS[4]  waitState?: the queue's state (prelude_wake); with KEYS[3]
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  field string: the owner's reader field "<client id>:<token>"
-- ARGV[3]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[4]  writeField string: the owner's write field "<owner>:write"
-- ARGV[5]  timeoutPrefix string: the owner's timeout key prefix ({name}:<owner>:rwlock_timeout)
-- ARGV[6]  count int64: the owner's write hold count once acquired, as the client counts it
-- ARGV[7]  readCount int64: the owner's read hold count, as the client counts it: the owner
--          is refused for an upgrade only when the client counts read
--          holds. Read holds Redis keeps for the owner while the client
--          counts none (left by a release whose reply was lost, or taken by
--          a later request when this is a late copy) are left alone and
--          count as any other reader's: the acquisition waits for them.
--          Deleting them, as this script once did, let a late copy of a
--          write attempt delete the owner's live read hold taken after it.
--
-- Returns {1, write hold count} when acquired;
--         {0, pttl} when other owners hold it (pttl -1: no expiry);
--         {0, -3} when this request was cancelled (undo) first;
--         {-1, 0} when the owner holds only read holds (nothing changed);
--         {-2, 0} when a reentrant acquisition (count > 1) finds the owner's
--                 write hold gone (lost): nothing changed.
--
-- ARGV[8]  client? string: the Client's id when it waits, listening on its own channel (with
--          KEYS[3]): when the lock is busy, the Client joins the queue (or stays in it) for
--          ARGV[9] ms (prelude_wake's wait_join), and when it takes the write side, it
--          leaves the queue (wait_took)
-- ARGV[9]  aliveMillis? string: how long, in milliseconds (a decimal string), the Client counts as
--          alive in the queue from now; with ARGV[8]
-- Reply    {code, value, [foreign]}
-- Code     Acquired = 1: Value is the write hold count
-- Code     Busy = 0: Value is the PTTL, or Cancelled; Foreign (with ARGV[8]) is 1 when the Client
--          is the first in the queue behind a holder it did not record (prelude_wake's wait_join)
-- Code     Upgrade = -1: the owner holds only read holds
-- Code     Lost = -2: a re-entry found the owner's write hold gone
-- Code     Cancelled = -3: Value when this request was cancelled first
local replay = acquire_replay(KEYS[2], ARGV[3])
if replay then
  return replay
end
local hash, lease = KEYS[1], (ARGV[1] + 0)
local count = ARGV[6] + 0
local mine = redis.call('hget', hash, 'mode') == 'write' and redis.call('hexists', hash, ARGV[4]) == 1
if count > 1 and not mine then
  return {-2, 0}
end
if mine then
  redis.call('hset', hash, ARGV[4], count)
  if redis.call('pttl', hash) < lease then
    redis.call('pexpire', hash, lease)
  end
else
  if (ARGV[7] + 0) > 0 then
    local v = redis.call('hget', hash, ARGV[2])
    if v and live(ARGV[5], tonumber(v)) then
      return {-1, 0}
    end
  end
  if redis.call('exists', hash) == 1 then
    lock_layout(hash, true) -- busy only with a read-write lock
    local pttl = redis.call('pttl', hash)
    if ARGV[8] then
      return {0, pttl, wait_join(KEYS[3], KEYS[4], ARGV[8], ARGV[9], hash)}
    end
    return {0, pttl}
  end
  redis.call('hset', hash, 'mode', 'write', ARGV[4], count)
  redis.call('pexpire', hash, lease)
  if ARGV[8] then
    wait_took(KEYS[3], KEYS[4], ARGV[8], ARGV[4])
  end
end
record(KEYS[2], count, ARGV[3])
return {1, count}
