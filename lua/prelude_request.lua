-- prelude_request: helpers shared by the state-changing scripts, prepended
-- to each of them when it is loaded (Redis scripts have no require). It
-- defines local functions only and runs no command by itself.
--
-- KEYS     none of its own: the functions take the keys they touch
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   recorded(key)           the result recorded under a request key, or nil
--   record(key, value, ttl) records a request's result for ttl milliseconds
--   undo_allowed(acq, ttl)  for a release in undo mode: true when the
--                           acquisition recorded under the request key acq
--                           took place, so the undo goes on; false when it
--                           did not (or was undone already). Either way the
--                           acquisition is marked cancelled, so that a late
--                           copy of it does nothing.
--   release_replay(req, acq, undo, ttl)
--                           the start of a release script: the recorded
--                           result of a re-sent release (request key req),
--                           or -2 for an undo (undo == '1') of an
--                           acquisition that did not take place; nil when
--                           the release goes on
--   acquire_replay(req)     the start of an acquisition script whose record
--                           is a count: {1, count} for a re-sent
--                           acquisition, {0, -3} when it was cancelled by an
--                           undo first; nil when the acquisition goes on
local function recorded(key)
  local v = redis.call('get', key)
  if v then
    return v
  end
  return nil
end

local function record(key, value, ttl)
  redis.call('set', key, value, 'px', ttl)
end

local function undo_allowed(acq, ttl)
  local v = redis.call('get', acq)
  redis.call('set', acq, 'cancelled', 'px', ttl)
  return v ~= false and v ~= 'cancelled'
end

local function release_replay(req, acq, undo, ttl)
  local rec = recorded(req)
  if rec then
    return tonumber(rec)
  end
  if undo == '1' and not undo_allowed(acq, ttl) then
    return -2
  end
  return nil
end

local function acquire_replay(req)
  local rec = recorded(req)
  if not rec then
    return nil
  end
  if rec == 'cancelled' then
    return {0, -3}
  end
  return {1, tonumber(rec)}
end

