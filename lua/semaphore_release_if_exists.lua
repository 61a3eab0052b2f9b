-- semaphore_release_if_exists: give n permits back to a counted semaphore
-- only when it exists (Redisson 4.0's RSemaphore.releaseIfExists), and
-- publish the new number of available permits as semaphore_release does;
-- when the semaphore does not exist, change nothing and create nothing.
-- Retry-safe through the client's ledger (prelude_ledger) as
-- semaphore_release: a copy re-sent after its release ran answers the
-- recorded result, also when the semaphore was deleted since. A copy that
-- finds no semaphore reads the ledger without writing it, so the ledger is
-- not created either; a later copy that finds the semaphore set meanwhile
-- releases (the first copy did nothing, so the release still happens once).
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  channel: channel (redisson_sc:{name})
-- KEYS[3]  ledger: the client's ledger on this semaphore (prelude_ledger)
-- KEYS[4]  waiters?: the semaphore's queue of waiting Clients (prelude_wake); with KEYS[5]:
--          the release wakes the first live Client queued (prelude_wake's wait_wake)
-- KEYS[5]  waitState?: the queue's state (prelude_wake)
-- ARGV[1]  n int64: n, the number of permits (> 0)
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[4]  seq int64: this request's number in the ledger
-- ARGV[5]  low int64: the client's low-water mark in the ledger (≤ seq)
-- ARGV[6]  wakePrefix? string: the waiting Clients' channels: this prefix and a Client's id;
--          with KEYS[4]
-- ARGV[7]  probe? string: "1" where a publish counts every receiver (prelude_wake); with
--          ARGV[6]
--
-- Returns {1, available permits after the release};
--         {0, 0} when the semaphore does not exist: nothing changed;
--         {2, 0} for a stale copy (below the low-water mark): nothing changed.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    {code, available}
-- Code     Released = 1: Available is the permits after the release
-- Code     Absent = 0: the semaphore does not exist: nothing changed
-- Code     Stale = 2: a copy its client no longer waits for: nothing changed

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[3] or '') ~= '' and KEYS[2] and not redis.acl_check_cmd(ARGV[3], KEYS[2], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to ' .. KEYS[2] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[3], ARGV[6])
if denied then
  return denied
end
number_at(KEYS[1]) -- a key of another type fails here, before any write
if redis.call('exists', KEYS[1]) == 0 then
  local low = tonumber(redis.call('hget', KEYS[3], 'lw'))
  if low and ARGV[4] + 0 < low then
    return {2, 0}
  end
  local rec = redis.call('hget', KEYS[3], ARGV[4])
  if rec then
    return {1, tonumber(rec)} -- released by an earlier copy; deleted since
  end
  return {0, 0}
end
local rec = ledger_replay(KEYS[3], ARGV[4], ARGV[5], ARGV[2])
if rec == 'stale' then
  return {2, 0}
elseif rec then
  return {1, tonumber(rec)}
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
local text = string.format('%d', value)
if ARGV[6] then
  wait_wake(KEYS[4], KEYS[5], ARGV[6], ARGV[3], KEYS[2], text, ARGV[7])
else
  redis.call(ARGV[3], KEYS[2], text)
end
ledger_record(KEYS[3], ARGV[4], text)
return {1, value}
