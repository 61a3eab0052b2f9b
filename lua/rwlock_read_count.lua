-- rwlock_read_count: an owner's read hold count on a read-write lock,
-- counting only an owner that still has a live read hold (a field left by
-- holds that all expired counts 0). Read only.
--
-- KEYS[1]  lock: lock hash
-- ARGV[1]  field string: owner field "<client id>:<token>"
-- ARGV[2]  timeoutPrefix string: the owner's timeout key prefix ({name}:<owner>:rwlock_timeout)
--
-- Returns the read hold count, 0 when the owner holds none.
--
-- Reply    count
lock_layout(KEYS[1], true) -- a hash of another layout is no read-write lock
local v = redis.call('hget', KEYS[1], ARGV[1])
if not v then
  return 0
end
local n = tonumber(v)
for i = 1, n do
  if redis.call('pttl', ARGV[2] .. ':' .. i) > 0 then
    return n
  end
end
return 0
