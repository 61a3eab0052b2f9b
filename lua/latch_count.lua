-- latch_count: read a count-down latch's count (Redisson RCountDownLatch
-- layout) as a write, so that the WAIT after it covers what was read. A
-- read alone cannot be acknowledged: WAIT waits for the offset of the
-- connection's last write, and a plain GET on the old primary of a split
-- brain (cut off, its replica promoted away, but still listing it) reads
-- count-downs that no replica has and that its demotion discards, so a
-- latch read open there is set again on the promoted replica. The fence
-- is a short-lived key of the caller's in the latch's slot, written on
-- every read: once the WAIT after this script is acknowledged, every
-- write the read saw is on the replicas. Changes nothing else; safe to
-- re-run.
--
-- KEYS[1]  latch: latch counter (the latch's name)
-- KEYS[2]  fence: the caller's fence key in the latch's slot (keys.Request of the latch and
--          the client's id and "read"), set for a second
-- ARGV     none
--
-- Returns the count: 0 when the latch is not set (open) or its stored
-- count is not positive.
--         An error reply (WRONGTYPE, or REDISYNC_WRONGTYPE from prelude_types)
--         when KEYS[1] is not a string holding a number.
--
-- Reply    count
local n = number_at(KEYS[1]) -- a key of another type fails here, before any write
redis.call('set', KEYS[2], '1', 'px', 1000)
if n < 0 then
  return 0
end
return n
