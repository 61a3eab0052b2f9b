-- lock_handoff: hand a lock from its owner to the next owner in one step
-- (an in-process handoff between two callers of one client): the release
-- of the last hold of the first owner and the acquisition for the second,
-- with no PUBLISH in between, since nobody else may take the lock at that
-- moment. Retry-safe through the release's request key; the acquisition is
-- recorded under its own request key, so that it can be undone (lock_release
-- in undo mode) when the reply is lost.
--
-- KEYS[1]  lock hash
-- KEYS[2]  lock channel (published only when the acquisition was cancelled
--          and the lock is freed instead)
-- KEYS[3]  request key of the release
-- KEYS[4]  request key of the acquisition for the next owner
-- KEYS[5]  fencing counter (read only when ARGV[5] == "1")
-- ARGV[1]  the next owner's lease in milliseconds
-- ARGV[2]  the releasing owner's field
-- ARGV[3]  the next owner's field
-- ARGV[4]  request deadline, epoch ms by the server clock (see prelude_request)
-- ARGV[5]  "1" to take a fencing token for the next owner, "0" not to
-- ARGV[6]  the next owner's hold count once acquired, as its client counts it
-- ARGV[7]  message published when the lock is freed instead ("" for none)
-- ARGV[8]  publish command: "publish", or "spublish"
--
-- Returns {0, 1, fencing token (0 without fencing)} when the lock was
--         handed over;
--         {0, 0, 0} when the acquisition had been cancelled: the lock was
--         released (and its waiters woken) instead;
--         {-1, 0, 0} when the releasing owner does not hold the lock:
--         nothing changed.
local done = count_replay(KEYS[3], ARGV[4])
if done then
  local acq = fenced_replay(KEYS[4], ARGV[4])
  if acq and acq[1] == 1 then
    return {done, 1, acq[3]}
  end
  return {done, 0, 0}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return {-1, 0, 0}
end
if redis.call('exists', KEYS[4]) == 1 then
  redis.call('del', KEYS[1])
  if ARGV[7] ~= '' then
    redis.call(ARGV[8], KEYS[2], ARGV[7])
  end
  record(KEYS[3], 0, ARGV[4])
  return {0, 0, 0}
end
redis.call('hdel', KEYS[1], ARGV[2])
local got = take_hold(KEYS[1], ARGV[3], ARGV[6], ARGV[1], ARGV[5], KEYS[5], KEYS[4], ARGV[4])
record(KEYS[3], 0, ARGV[4])
return {0, 1, got[3]}
