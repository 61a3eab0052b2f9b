-- prelude_rwlock: helpers shared by the read-write lock's scripts,
-- prepended to each of them when it is loaded (after prelude_request). It
-- defines local functions only and runs no command by itself.
--
-- KEYS     none of its own: the functions take the keys they touch
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   live(prefix, n)   whether any of a reader's hold timeout keys
--                     prefix:1 .. prefix:n is alive
--   readers(hash, head, tail)
--                     drops the reader fields of the hash none of whose
--                     holds is alive (their owner crashed or was paused past
--                     its lease) and returns the longest remaining lease,
--                     in milliseconds, of the live read holds (0: none).
--                     Reader r's n-th hold key is head .. r .. tail .. ':' .. n.
--   free_write(hash, head, tail)
--                     after the last write hold's field was deleted (a fresh
--                     write hold's release): deletes the hash when only
--                     "mode" is left, which is always so for a fresh hold
--                     (its owner never reads); otherwise keeps the rule of
--                     rwlock_write_release: mode "read" with the longest
--                     live read hold's lease, or the hash deleted when no
--                     read hold lives.
local function live(prefix, n)
  for i = 1, n do
    if redis.call('pttl', prefix .. ':' .. i) > 0 then
      return true
    end
  end
  return false
end

local function readers(hash, head, tail)
  local longest = 0
  for _, f in ipairs(redis.call('hkeys', hash)) do
    if f ~= 'mode' and string.sub(f, -6) ~= ':write' then
      local n = tonumber(redis.call('hget', hash, f)) or 0
      local alive = false
      for i = 1, n do
        local t = redis.call('pttl', head .. f .. tail .. ':' .. i)
        if t > 0 then
          alive = true
          if t > longest then
            longest = t
          end
        end
      end
      if not alive then
        redis.call('hdel', hash, f)
      end
    end
  end
  return longest
end

local function free_write(hash, head, tail)
  if redis.call('hlen', hash) > 1 then
    local longest = readers(hash, head, tail)
    if longest > 0 then
      redis.call('hset', hash, 'mode', 'read')
      redis.call('pexpire', hash, longest)
      return
    end
  end
  redis.call('del', hash)
end
