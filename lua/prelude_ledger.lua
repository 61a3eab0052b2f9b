-- prelude_ledger: a client's ledger of its requests on one counted
-- semaphore, prepended to the counted semaphore's acquisition and release
-- when they are loaded. It defines local functions only and runs no command
-- by itself.
--
-- Why a ledger. A request record (prelude_request) tells a re-sent copy
-- that its request ran, but only until a second past the request's
-- deadline: a client whose reply was lost and who could not reach Redis for
-- longer (a partition outlasting the request's lifetime) can no longer tell
-- whether its release ran, nor undo its acquisition. A counted semaphore's
-- permits come back by no other way, so the ledger keeps the outcome of each
-- of a client's requests on one semaphore for as long as the client may
-- still ask: one small hash per client and semaphore, in the semaphore's
-- slot, whose fields are the client's request numbers (seq) and whose
-- field "lw" is the lowest request number the client may still ask about.
-- Every request carries its number and the client's low-water mark (the
-- lowest number of its requests on this semaphore whose outcome it does not
-- know yet): fields below it are dropped, so the hash holds the requests in
-- flight only. A copy of a request below the mark is stale: its client
-- knows its outcome (or gave up on it) and waits for no reply, so it
-- changes nothing. The hash lives 70 minutes and a second after the
-- client's latest request on the semaphore recorded in it: a client asks
-- about one request (re-sends it, or sends its undo) for at most an hour
-- after its call returned (request.completeMax: CompleteRelease, Undo),
-- which was at most a request lifetime (request.MaxTTL, 5 minutes) after
-- the request was sent, and its last question lives at most a request
-- lifetime more, to a second past its deadline as records do; so every
-- copy that can still arrive after the outcome was recorded, the last
-- question included, finds the ledger (request's ledger_ttl test keeps
-- the figure equal to completeMax + 2 × MaxTTL + 1 s).
--
-- A copy is still refused after its deadline (refuse_late) unless the
-- ledger has its outcome: a client re-sending a request after a long
-- outage sends it with a new deadline and the same number, so the ledger,
-- not the deadline, decides whether it ran.
--
-- KEYS     none of its own: the functions take the ledger's key
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   ledger_replay(h, seq, lw, deadline)
--                          the outcome recorded for request seq in ledger
--                          h, 'stale' for a copy below the low-water mark,
--                          or nil when the request goes on (after refusing
--                          a late one, and dropping the fields below lw)
--   ledger_record(h, seq, value)
--                          records request seq's outcome and keeps the
--                          ledger 70 minutes and a second
local ledger_ttl = '4201000' -- 70 min 1 s, in ms (a string: Redis formats numbers at a cost)

local function ledger_replay(h, seq, lw, deadline)
  local low = tonumber(redis.call('hget', h, 'lw'))
  seq, lw = seq + 0, lw + 0
  if low and seq < low then
    return 'stale'
  end
  local rec = redis.call('hget', h, tostring(seq))
  if rec then
    redis.call('hset', h, tostring(seq), rec) -- a replay is a write (prelude_request's recorded)
    return rec
  end
  refuse_late(deadline)
  if not low or lw > low then
    if low then
      for _, f in ipairs(redis.call('hkeys', h)) do
        if f ~= 'lw' and tonumber(f) < lw then
          redis.call('hdel', h, f)
        end
      end
    end
    redis.call('hset', h, 'lw', lw)
  end
  return nil
end

local function ledger_record(h, seq, value)
  redis.call('hset', h, seq, value)
  redis.call('pexpire', h, ledger_ttl)
end
