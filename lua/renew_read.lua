-- renew_read: extend the leases of watchdog-held read holds of read-write
-- locks, many in one call. For each hold, every timeout key of the owner's
-- read holds (<prefix>:1 .. <prefix>:<count>) gets the lease again, and the
-- hash's TTL becomes at least the lease. The stored count is left as it
-- is: a renewal built before a re-entry or a release of the owner may run
-- after it, and must not undo it (the owner's acquisitions and releases,
-- which this client serializes, set the count; holds Redis keeps beyond
-- it, left by a release whose reply was lost, are not renewed and expire
-- with their own timeout keys). A hold is gone, and not touched, when its owner's reader field is
-- missing (released, force-unlocked) or none of its timeout keys is alive
-- (they expired).
--
-- Common renewal encoding (RenewalBatch, renewal.go; see renew_lock.lua):
-- KEYS[1..] holdKeys: one per hold: the lock hash
-- ARGV[1]  leaseMillis int64: lease in milliseconds
-- ARGV[2]  n int64: number of holds n
-- ARGV[3..] perHold any: then per hold: its number of keys (1), its
--          number of args (3), and the args: the owner's reader field, the
--          owner's timeout key prefix ({name}:<owner>:rwlock_timeout), the
--          read hold count
--
-- Returns an array of n integers: 1 renewed, 0 the hold is gone.
-- Hold KEYS[1]  lock: the lock hash
-- Hold ARGV[1]  field string: the owner's reader field
-- Hold ARGV[2]  timeoutPrefix string: the owner's timeout key prefix
--          ({name}:<owner>:rwlock_timeout) (the watchdog adds the read
--          hold count)
--
-- Reply    {results...}
-- Code     Renewed = 1: a result when the hold was renewed
-- Code     Gone = 0: a result when the hold is gone
local lease = ARGV[1] + 0
local n = ARGV[2] + 0
local res = {}
local k, a = 1, 3
for h = 1, n do
  local nkeys, nargs = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local field, prefix, count = ARGV[a + 2], ARGV[a + 3], tonumber(ARGV[a + 4])
  local ok = 0
  local v = redis.call('hget', KEYS[k], field)
  if v then
    local stored = tonumber(v)
    for i = 1, math.min(stored, count) do
      if redis.call('pexpire', prefix .. ':' .. i, lease) == 1 then
        ok = 1
      end
    end
    if ok == 1 then
      if redis.call('pttl', KEYS[k]) < lease then
        redis.call('pexpire', KEYS[k], lease)
      end
    end
  end
  res[h] = ok
  k = k + nkeys
  a = a + 2 + nargs
end
return res
