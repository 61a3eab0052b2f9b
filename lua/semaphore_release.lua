-- semaphore_release: give n permits back to a counted semaphore and publish
-- the new number of available permits, or undo an acquisition whose reply
-- never arrived. Releasing needs no owner: it creates the key when absent
-- (a release of an unset semaphore leaves n permits). Retry-safe through the
-- client's ledger (prelude_ledger), however late a copy comes while the
-- client still asks.
--
-- KEYS[1]  semaphore: semaphore: available permits
-- KEYS[2]  channel: channel (redisson_sc:{name})
-- KEYS[3]  ledger: the client's ledger on this semaphore (prelude_ledger)
-- KEYS[4]  waiters?: the semaphore's queue of waiting Clients (prelude_wake); with KEYS[5]:
--          the release wakes the first live Client queued (prelude_wake's wait_wake)
-- KEYS[5]  waitState?: the queue's state (prelude_wake)
-- ARGV[1]  n int64: n, the number of permits (> 0); ignored in undo mode, where the
--          acquisition's record says how many it took
-- ARGV[2]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[3]  undo bool: "1": undo mode. The permits are given back only if the
--          acquisition ARGV[7] took place; either way it is marked cancelled
--          so that a late copy of it does nothing.
-- ARGV[4]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[5]  seq int64: this request's number in the ledger
-- ARGV[6]  low int64: the client's low-water mark in the ledger (≤ seq)
-- ARGV[7]  undoSeq int64: undo mode only: the number of the acquisition to undo (else 0)
-- ARGV[8]  wakePrefix? string: the waiting Clients' channels: this prefix and a Client's id;
--          with KEYS[4]
-- ARGV[9]  probe? string: "1" where a publish counts every receiver (prelude_wake); with
--          ARGV[8]
--
-- Returns {1, available permits after the release};
--         {0, 0} in undo mode when the acquisition never took place;
--         {2, 0} for a stale copy (below the low-water mark): nothing changed.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number: nothing changed.
--
-- Reply    {code, available}
-- Code     Released = 1: Available is the permits after the release
-- Code     NotTaken = 0: in undo mode, the acquisition never took place
-- Code     Stale = 2: a copy its client no longer waits for: nothing changed

-- Refuse a PUBLISH the ACL user may not send before anything is written
-- (Redis 7.0+; see package lua, "Permissions").
if redis.acl_check_cmd and (ARGV[4] or '') ~= '' and KEYS[2] and not redis.acl_check_cmd(ARGV[4], KEYS[2], '0') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[4] .. ' to ' .. KEYS[2] .. ': nothing was changed')
end
local denied = wait_denied(ARGV[4], ARGV[8])
if denied then
  return denied
end
number_at(KEYS[1]) -- a key of another type fails here, before any write
local rec = ledger_replay(KEYS[3], ARGV[5], ARGV[6], ARGV[2])
if rec == 'stale' then
  return {2, 0}
elseif rec == 'none' then
  return {0, 0}
elseif rec then
  return {1, tonumber(rec)}
end
local n = ARGV[1]
if ARGV[3] == '1' then
  local acq = redis.call('hget', KEYS[3], ARGV[7])
  redis.call('hset', KEYS[3], ARGV[7], 'cancelled') -- a late copy of it does nothing
  if not acq or acq == 'cancelled' or acq == 'short' then
    ledger_record(KEYS[3], ARGV[5], 'none')
    return {0, 0}
  end
  n = acq
end
local value = redis.call('incrby', KEYS[1], n)
local text = string.format('%d', value)
if ARGV[8] then
  wait_wake(KEYS[4], KEYS[5], ARGV[8], ARGV[4], KEYS[2], text, ARGV[9])
else
  redis.call(ARGV[4], KEYS[2], text)
end
ledger_record(KEYS[3], ARGV[5], text)
return {1, value}
