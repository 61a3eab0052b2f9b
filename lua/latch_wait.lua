-- latch_wait: a latch waiter's read: the count of a count-down latch
-- (Redisson RCountDownLatch layout) and the identity of the server that
-- answers (its run_id, which a restart or a failover changes), so that a
-- waiter can tell a latch counted down to zero or deleted (by any client,
-- Java included) from one that vanished with its server: a latch seen set
-- on one server and found missing on another was lost, not opened. With
-- a fence key (replica acknowledgement on), the read is a write as
-- latch_count's is, so that the WAIT after it covers what was read.
-- Changes nothing else; safe to re-run.
--
-- KEYS[1]  latch: latch counter (the latch's name)
-- KEYS[2]  fence?: the caller's fence key in the latch's slot, set for a second (see
--          latch_count.lua); absent without replica acknowledgement
-- ARGV     none
--
-- Returns {count, server}: count 0 when the latch is not set (open) or its
-- stored count is not positive; server the run_id of the server that ran
-- the script ("" when the server cannot say).
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number.
--
-- Reply    {count, server string}
local n = number_at(KEYS[1]) -- a key of another type fails here, before any write
if KEYS[2] then
  redis.call('set', KEYS[2], '1', 'px', 1000)
end
-- pcall: a server without INFO in scripts (a stand-in) names none, and
-- its waiters cannot tell a lost latch from an opened one
local info = redis.pcall('info', 'server')
local server = type(info) == 'string' and string.match(info, 'run_id:(%x+)') or ''
if n < 0 then
  n = 0
end
return {n, server}
