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
--   lock_layout(hash, rw)
--                     for the locks' scripts, before they report a lock
--                     busy, queue a waiter or delete it: raises
--                     REDISYNC_WRONGTYPE when hash (a hash, or no key) has a
--                     field no lock has, so that an application's hash under
--                     a lock's name is refused and left unchanged instead of
--                     being waited on forever or deleted. A lock's fields
--                     are owners "<client id>:<token>" (any client of
--                     Redisson's protocol: the token may be a number, a
--                     Java thread id, another client's uuid) holding hold
--                     counts (integers, 0 for a field a release within a
--                     minimum hold keeps); with rw (a read-write lock's),
--                     also "mode" (read or write, and present whenever the
--                     hash exists) and writers "<owner>:write".
--                     The same rule as internal/layout's (the CLI's).
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

local function lock_layout(hash, rw)
  -- HKEYS and HGET, not HGETALL: the commands SECURITY.md's ACL rule has;
  -- the names first, so that an application's hash is refused at once
  local fields = redis.call('hkeys', hash)
  local mode = false
  for pass = 1, 2 do
    for _, f in ipairs(fields) do
      local ok
      if rw and f == 'mode' then
        local v = pass == 2 and redis.call('hget', hash, f)
        ok, mode = pass == 1 or v == 'read' or v == 'write', true
      else
        -- an owner "<client id>:<token>" (a redisync token, a Java thread
        -- id, node-redisson's uuid: any client of Redisson's protocol) or
        -- a writer "<owner>:write", holding a hold count (0: a release
        -- within a minimum hold kept the field until the lock expires)
        ok = string.match(f, '^.+:.+$') ~= nil
        if ok and pass == 2 then
          ok = string.match(redis.call('hget', hash, f), '^%d+$') ~= nil
        end
      end
      if not ok then
        error({err = 'REDISYNC_WRONGTYPE key ' .. hash .. ' is a hash with a field ' .. f ..
          ' that no lock has: not a lock, left unchanged'})
      end
    end
  end
  if rw and #fields > 0 and not mode then
    error({err = 'REDISYNC_WRONGTYPE key ' .. hash .. ' is a hash without a mode field: not a read-write lock, left unchanged'})
  end
end
