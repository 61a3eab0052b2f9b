-- prelude_fair: helpers shared by the fair lock's scripts, prepended to each
-- of them when it is loaded (Redis scripts have no require). It defines local
-- functions only and runs no command by itself. Deadlines come from the
-- server's clock (TIME), never from a client's.
--
-- KEYS     none of its own: the functions take the keys they touch
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   fair_now()                    the server's time in epoch milliseconds
--   fair_prune(queue, timeouts, now)
--                                 drops the waiters at the head of the queue
--                                 whose deadline (their score in timeouts)
--                                 has passed, or who have none; returns true
--                                 when it dropped any
--   fair_notify(queue, prefix, cmd)
--                                 publishes "0" with cmd ("publish" or
--                                 "spublish") on prefix .. ":" .. the owner
--                                 at the head of the queue, if any; returns
--                                 that owner or false
local function fair_now()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

local function fair_prune(queue, timeouts, now)
  local dropped = false
  while true do
    local head = redis.call('lindex', queue, '0')
    if not head then
      break
    end
    local deadline = redis.call('zscore', timeouts, head)
    if deadline and tonumber(deadline) > now then
      break
    end
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, head)
    dropped = true
  end
  return dropped
end

local function fair_notify(queue, prefix, cmd)
  local head = redis.call('lindex', queue, '0')
  if head then
    redis.call(cmd, prefix .. ':' .. head, '0')
  end
  return head
end

