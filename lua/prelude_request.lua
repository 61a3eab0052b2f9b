-- prelude_request: helpers shared by the state-changing scripts, prepended
-- to each of them when it is loaded (Redis scripts have no require; each
-- gets only the definitions it uses: lua.compose). It defines local
-- functions only and runs no command by itself.
--
-- Exactly once. Every state-changing request carries a request key (where
-- its result is recorded) and a deadline (epoch milliseconds by the Redis
-- server's clock). A copy of a request that finds the record returns it and
-- changes nothing; a copy that finds no record after the deadline is
-- refused (REDISYNC_LATE) and changes nothing; the record lives until a
-- second past the deadline. So a copy delivered at any later time — a
-- go-redis re-send, a request held up in the network for minutes — either
-- returns what the first one did or does nothing, and records still expire.
-- (The fresh holds of lock_acquire_fresh and lock_release_fresh need no
-- record while they last, the owner's field serving as one; the
-- acquisition checks the deadline as refuse_late does, written out, and
-- records only for a lease shorter than the deadline.)
--
-- KEYS     none of its own: the functions take the keys they touch
-- ARGV     none of its own: the functions take the deadline
-- Returns  nothing. It defines:
--   recorded(key)           the result recorded under a request key, or nil;
--                           a record found is written again (a replay is a
--                           write: the WAIT after it covers the first run)
--   refuse_late(deadline)   reads the server's clock and fails the script
--                           with REDISYNC_LATE when it is past deadline; call
--                           it after looking for the record, before any write
--   record(key, value, deadline)
--                           records a request's result until a second past
--                           its deadline (after refuse_late)
--   take_for_undo(acq, deadline)
--                           for a release in undo mode: the record of the
--                           acquisition under the request key acq when it
--                           took place (the undo goes on), nil when it did
--                           not or was undone already. Either way the
--                           acquisition is marked cancelled, so that a copy
--                           of it arriving later does nothing
--   undo_allowed(acq, deadline)
--                           take_for_undo(acq, deadline) ~= nil
--   release_replay(req, acq, undo, deadline)
--                           the start of a release script: the recorded
--                           result of a re-sent release (request key req),
--                           -3 for a release the client settled (its reply
--                           lost, the client marked req "cancelled" with
--                           SET NX so that no copy of it applies after the
--                           owner's later requests: core's Client.Settle), or -2
--                           for an undo (undo == '1') of an acquisition
--                           that did not take place; nil when the release
--                           goes on. Refuses late requests.
--   count_replay(req, deadline)
--                           the start of a script whose record is a number:
--                           that number for a re-sent request; nil when the
--                           request goes on. Refuses late requests.
--   fenced_replay(req, deadline)
--                           the start of a lock acquisition whose record is
--                           "<count>:<fencing token>": {1, count, token} for
--                           a re-sent acquisition, {0, -3} when it was
--                           cancelled by an undo first; nil when the
--                           acquisition goes on. Refuses late requests.
--   acquire_replay(req, deadline)
--                           the start of an acquisition script whose record
--                           is a count: {1, count} for a re-sent
--                           acquisition, {0, -3} when it was cancelled by an
--                           undo first; nil when the acquisition goes on.
--                           Refuses late requests.
local request_now -- the server's clock when refuse_late ran, epoch ms
local request_deadline -- the deadline refuse_late checked (a string: ARGV)
local request_left -- the milliseconds left to it then (below 0: late)

-- recorded rewrites a record it finds (the same value and expiry): a copy
-- that replays a result must be a write, so that the WAIT after it covers
-- the first run's writes. WAIT waits for the replicas to reach the offset
-- of the connection's last write, and a copy re-sent on another connection
-- (go-redis re-sends a pipeline on a new one) that wrote nothing would be
-- acknowledged at once, by the offset of whatever that connection wrote
-- last (nothing: 0), while the first run's writes may not have reached a
-- replica, or the primary may be an old one whose listed replica is gone.
local function recorded(key)
  local v = redis.call('get', key)
  if v then
    redis.call('set', key, v, 'keepttl')
    return v
  end
  return nil
end

-- Each string-to-number conversion is a strtod, which costs more than a
-- dozen Lua steps: the deadline is converted once, here, and record reuses
-- what is left of it. (Arithmetic converts a string once, tonumber twice:
-- see package lua's documentation.)
local function refuse_late(deadline)
  local t = redis.call('time')
  request_now = t[1] * 1000 + math.floor(t[2] / 1000)
  request_deadline, request_left = deadline, deadline - request_now
  if request_left < 0 then
    error({err = 'REDISYNC_LATE request delivered after its deadline: not applied'})
  end
end

local function record(key, value, deadline)
  local left = request_left
  if deadline ~= request_deadline then
    left = deadline - request_now
  end
  redis.call('set', key, value, 'px', math.max(left, 0) + 1000)
end

local function take_for_undo(acq, deadline)
  local v = redis.call('get', acq)
  record(acq, 'cancelled', deadline)
  if v and v ~= 'cancelled' and v ~= 'short' then
    return v
  end
  return nil
end

local function undo_allowed(acq, deadline)
  return take_for_undo(acq, deadline) ~= nil
end

-- replay is the start every recorded script shares: decode(record) for a
-- re-sent request, nil (after refusing a late one) when it goes on.
local function replay(req, deadline, decode)
  local rec = recorded(req)
  if rec then
    return decode(rec)
  end
  refuse_late(deadline)
  return nil
end

local function count_replay(req, deadline)
  return replay(req, deadline, tonumber)
end

local function release_replay(req, acq, undo, deadline)
  local done = replay(req, deadline, function(rec)
    if rec == 'cancelled' then
      return -3 -- settled by the client after its reply was lost
    end
    return tonumber(rec)
  end)
  if done then
    return done
  end
  if undo == '1' and not undo_allowed(acq, deadline) then
    return -2
  end
  return nil
end

local function acquire_replay(req, deadline)
  return replay(req, deadline, function(rec)
    if rec == 'cancelled' then
      return {0, -3}
    end
    return {1, tonumber(rec)}
  end)
end

local function fenced_replay(req, deadline)
  return replay(req, deadline, function(rec)
    if rec == 'cancelled' then
      return {0, -3}
    end
    local count, token = string.match(rec, '^(%d+):(%d+)$')
    return {1, tonumber(count), tonumber(token)}
  end)
end

