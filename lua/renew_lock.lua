-- renew_lock: extend the leases of watchdog-held locks and write holds of
-- read-write locks, many in one call. The owner's count is left as it is:
-- a renewal built before a re-entry or a release of the owner may run
-- after it, and must not undo it (the owner's acquisitions and releases,
-- which the client serializes, set the count it believes in). A hold
-- whose owner field is gone is not touched (it was released, expired or
-- force-unlocked), nor one whose count is 0 (released within its minimum
-- hold: kept only until the lock expires).
--
-- Common renewal encoding (RenewalBatch, renewal.go):
-- KEYS[1..] holdKeys: the keys of every hold, in order; here one per hold: the hash
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  n int64: number of holds n
-- ARGV[3..] perHold any: then per hold: its number of keys, its number of args, its args; here two
--          args per hold: the owner field, the hold count
--
-- Returns an array of n integers: 1 renewed, 0 the hold is gone.
-- Hold KEYS[1]  lock: the lock hash
-- Hold ARGV[1]  field string: the owner field (the watchdog adds the hold
--          count)
--
-- Reply    {results...}
-- Code     Renewed = 1: a result when the hold was renewed
-- Code     Gone = 0: a result when the hold is gone
local lease = ARGV[1]
local n = ARGV[2] + 0
local res = {}
local k, a = 1, 3
for i = 1, n do
  local nkeys, nargs = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local field, count = ARGV[a + 2], ARGV[a + 3]
  local v = redis.call('hget', KEYS[k], field)
  -- '0': a release within a minimum hold kept the field until the lock
  -- expires; a renewal sent before that release must not extend it
  if v and v ~= '0' then
    redis.call('pexpire', KEYS[k], lease)
    res[i] = 1
  else
    res[i] = 0
  end
  k = k + nkeys
  a = a + 2 + nargs
end
return res
