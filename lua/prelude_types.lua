-- prelude_types: checks that a key holds what the primitive's layout says,
-- for the scripts of the string-based primitives (semaphores, latch) and
-- for the fair lock's fencing counter, prepended to them when they are
-- loaded (before the other preludes). A key of another Redis type already
-- fails the first command on it with Redis's WRONGTYPE; these checks catch
-- a string that is not a number, which would otherwise fail later in Lua
-- ("attempt to compare number with nil") or in INCRBY, possibly after a
-- write. Each script reads its key through them before it writes
-- anything, so a wrong key changes nothing. It defines local functions
-- only and runs no command by itself.
--
-- KEYS     none of its own: the functions take the keys they read
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   wrong_type(key)   raises the error reply "REDISYNC_WRONGTYPE <key> ..."
--                     (the client maps it to ErrWrongType, as WRONGTYPE)
--   number_at(key)    GET key as a number: 0 when the key does not exist;
--                     WRONGTYPE when it is not a string, REDISYNC_WRONGTYPE
--                     when it is a string but not an integer
local function wrong_type(key)
  error({err = 'REDISYNC_WRONGTYPE key ' .. key .. ' holds a string that is not an integer'})
end

local function number_at(key)
  local v = redis.call('get', key)
  if not v then
    return 0
  end
  local n = tonumber(v)
  if not n or n ~= math.floor(n) then
    wrong_type(key)
  end
  return n
end
