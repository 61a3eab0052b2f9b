-- gcra_take: the generic cell rate algorithm, by the Redis server's clock
-- in microseconds. The limiter is one string, the theoretical arrival
-- time (TAT): when the limiter is back to a full burst. Taking n events
-- moves it n emission intervals later; they are conformant, and may happen,
-- once the new TAT is at most burst intervals ahead. The call takes them
-- when that time is at most the longest delay from now: 0 (Allow: now or
-- not at all), -1 (Reserve: whenever it is), or a bound (Wait: before the
-- context's deadline). The key expires when the TAT is reached, so an idle
-- limiter holds nothing. It is not composed with prelude_request (whose
-- functions would be defined at every call) but follows its rules. With
-- "1" in ARGV[6] it is retry-safe: a take is
-- recorded under the request key, a re-sent request returns it, and a
-- late one is refused. With "0" (Allow: one command less each way, as
-- cheap as redis_rate) a request re-sent after a lost reply takes again:
-- the limiter then allows fewer events, never more.
--
-- KEYS[1]  limiter: limiter (its name): the TAT, epoch µs
-- KEYS[2]  request: request key of this call (ARGV[6] "0": any key of the slot, unused)
-- ARGV[1]  emissionMicros int64: emission interval in µs (the period over the rate, rounded up)
-- ARGV[2]  burst int64: burst (≥ 1)
-- ARGV[3]  n int64: n, the number of events (1 ≤ n ≤ burst)
-- ARGV[4]  longestMicros int64: longest delay accepted in µs: 0 only now, -1 any
-- ARGV[5]  deadline int64: request deadline, epoch ms by the server clock (see prelude_request; unused with ARGV[6] "0")
-- ARGV[6]  record bool: "1" to record the take under KEYS[2], "0" not to
--
-- A key of another type fails with WRONGTYPE, a string that is not a
-- number with REDISYNC_WRONGTYPE, both before anything is written.
--
-- Returns {1, delay, remaining, reset, tat, now} when the n events were
--         taken, to happen in delay µs (0: now); {0, retry, remaining,
--         reset, "0", now} when not: they could be in retry µs. remaining:
--         events that could be taken at once afterwards; reset: µs until
--         the limiter is back to a full burst; tat: the TAT after the take
--         (for a cancel); now: the server's clock, epoch µs.
--
-- Reply    {code, delay, remaining, reset, tat string, now}
-- Code     Taken = 1: the events were taken; Delay is when they happen
-- Code     NotTaken = 0: they were not; Delay is when they could be
local t = redis.call('time')
local now = t[1] * 1000000 + t[2]
local em, burst, n = (ARGV[1] + 0), (ARGV[2] + 0), (ARGV[3] + 0)
local full = now + burst * em -- a TAT this late leaves no event to take
local keep = ARGV[6] == '1'
if keep then
  local rec = redis.call('get', KEYS[2])
  if rec then
    redis.call('set', KEYS[2], rec, 'keepttl') -- a replay is a write (prelude_request's recorded)
    local tat = math.max(tonumber(redis.call('get', KEYS[1]) or '0'), now)
    return {1, math.max(tonumber(rec) - burst * em - now, 0),
      math.max(math.min(math.floor((full - tat) / em), burst), 0), tat - now, rec, now}
  end
  -- prelude_request's refuse_late, on the clock read above.
  if math.floor(now / 1000) > (ARGV[5] + 0) then
    error({err = 'REDISYNC_LATE request delivered after its deadline: not applied'})
  end
end
local cur = redis.call('get', KEYS[1]) or '0'
if not tonumber(cur) then
  error({err = 'REDISYNC_WRONGTYPE key ' .. KEYS[1] .. ' holds a string that is not a GCRA arrival time'})
end
local tat = math.max(tonumber(cur), now)
local new = tat + n * em
local delay = new - burst * em - now
local longest = ARGV[4] + 0
if delay > 0 and longest >= 0 and delay > longest then
  return {0, delay, math.max(math.min(math.floor((full - tat) / em), burst), 0), tat - now, '0', now}
end
local s = string.format('%.0f', new)
redis.call('set', KEYS[1], s, 'px', math.ceil((new - now) / 1000))
if keep then
  -- prelude_request's record: until a second past the deadline.
  redis.call('set', KEYS[2], s, 'px', math.max(ARGV[5] - math.floor(now / 1000), 0) + 1000)
end
return {1, math.max(delay, 0), math.max(math.floor((full - new) / em), 0), new - now, s, now}
