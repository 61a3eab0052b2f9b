-- gcra_cancel: give back what a reservation (gcra_take) took, as far as no
-- later reservation relies on it (x/time/rate's rule): nothing when its
-- time has come; otherwise the TAT moves back by what it took minus what
-- later takes added after it. Retry-safe: the result is recorded under the
-- request key.
--
-- KEYS[1]  limiter: limiter (its name): the TAT, epoch µs
-- KEYS[2]  request: request key of this cancel
-- ARGV[1]  tat string: the TAT right after the reservation, epoch µs
-- ARGV[2]  took int64: what the reservation took, µs (n emission intervals)
-- ARGV[3]  actMicros int64: the reservation's time to act, epoch µs
-- ARGV[4]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request)
--
-- Returns the µs given back (0: nothing).
--
-- Reply    givenBack
local done = count_replay(KEYS[2], ARGV[4])
if done then
  return done
end
local t = redis.call('time')
local now = t[1] * 1000000 + t[2]
local after, took, act = tonumber(ARGV[1]), (ARGV[2] + 0), (ARGV[3] + 0)
local give = 0
local cur = redis.call('get', KEYS[1])
if cur and now < act then
  local tat = tonumber(cur)
  give = took - math.max(tat - after, 0)
  if give > 0 then
    local back = tat - give
    if back <= now then
      redis.call('del', KEYS[1])
    else
      redis.call('set', KEYS[1], string.format('%.0f', back), 'px', math.ceil((back - now) / 1000))
    end
  else
    give = 0
  end
end
record(KEYS[2], string.format('%.0f', give), ARGV[4])
return give
