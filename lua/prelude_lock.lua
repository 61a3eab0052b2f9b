-- prelude_lock: the steps the lock's kinds share (lock, spin lock, fair
-- lock), prepended to their acquire and release scripts when they are
-- loaded (after prelude_request). It defines local functions only and runs no
-- command by itself.
--
-- KEYS     none of its own: the functions take the keys they touch
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   release_hold(req, acq, undo, deadline, hash, field, count, lease)
--       a release (or, undo == '1', the undo of the acquisition recorded
--       under acq) that sets the owner's hold count in the lock hash to
--       count: above 0 the lease is set again, at 0 the owner's field is
--       deleted, and with it the lock (the field is its only one).
--       Returns what the script must return at once (the record of a
--       re-sent release; -2 for an undo of an acquisition that did not
--       take place; -1 when the owner does not hold the lock: nothing
--       changed, and -1 recorded under req, so that a copy of the request
--       delivered later, once the same owner holds the lock again, replays
--       -1 instead of releasing that new hold), or nil and count when the
--       release took place and the script goes on to wake waiters and
--       record count.
--   take_hold(hash, field, count, lease, fencing, counter, req, deadline, held)
--       sets the owner's hold count in the lock hash to count with the
--       lease; an acquisition that starts the hold (count 1) takes a
--       fencing token (next_token of counter) when fencing == '1', and a
--       re-entry (count > 1) keeps the hold's token held (a decimal string,
--       "0" for a hold without one); records "<count>:<token>" under req
--       and returns {1, count, token} (token 0 without fencing). The INCR
--       comes before any write: a counter of another type (WRONGTYPE) or a
--       string that is not an integer ("ERR value is not an integer")
--       fails the script with nothing changed.
--   next_token(counter, t)
--       the next fencing token: INCR of counter, raised to the floor
--       t[1] * 1000000 + t[2] (t: a TIME reply, the server's clock in
--       microseconds since the epoch) when below it, the counter then SET
--       to the floor. So a token is never below the server's clock when
--       it was issued, and a counter lost (a restart without persistence,
--       eviction, a failover to a replica that missed the last INCR)
--       starts again above every token issued before (see
--       docs/fencing-tokens.md for the guarantee and its limits). The
--       INCR comes first: a counter of another type fails it, nothing
--       changed.
--   lock_exists(hash)
--       for a force unlock, before it writes anything: true when hash is a
--       lock's hash, false when it does not exist; raises the error reply
--       "REDISYNC_WRONGTYPE ..." (the client's ErrWrongType) when it holds
--       another type, or a hash whose fields are not a lock's
--       (lock_layout, prelude_types), which is no lock and is left as it is
--   cancel_holds(hash, prefix, ttl)
--       for a force unlock, before it deletes the hash (which lock_exists
--       found): marks the request key of every owner's fresh hold (prefix
--       .. field, see lock_acquire_fresh) "cancelled" for ttl milliseconds,
--       so that a copy of a fresh hold's acquisition still in flight does
--       nothing. The fields of other holds (context owners, Redisson
--       clients) get a mark nobody reads, which expires.
local function release_hold(req, acq, undo, deadline, hash, field, count, lease)
  local replay = release_replay(req, acq, undo, deadline)
  if replay then
    return replay
  end
  count = tonumber(count)
  if count > 0 then
    if redis.call('hexists', hash, field) == 0 then
      record(req, -1, deadline)
      return -1
    end
    redis.call('hset', hash, field, count)
    redis.call('pexpire', hash, lease)
  elseif redis.call('hdel', hash, field) == 0 then
    -- one command for the last release: the owner's field is the lock's
    -- only one (exclusive), so deleting it deletes the hash
    record(req, -1, deadline)
    return -1
  end
  return nil, count
end

-- keep_hold(req, acq, undo, deadline, hash, field, remain): a release
-- within the minimum hold (rlock.WithMinHold) keeps the owner's field,
-- with the count 0, and lets the lock expire remain ms from now. It returns the recorded result
-- of a copy that ran already, -1 when the owner does not hold the lock,
-- or nil once the hold is kept (the caller wakes its waiters, who find the
-- lock busy and re-check at its expiry, and records 0).
local function keep_hold(req, acq, undo, deadline, hash, field, remain)
  local replay = release_replay(req, acq, undo, deadline)
  if replay then
    return replay
  end
  if redis.call('hexists', hash, field) == 0 then
    record(req, -1, deadline)
    return -1
  end
  -- count 0: no renewal extends the field any more (renew_lock), one sent
  -- before this release included
  redis.call('hset', hash, field, 0)
  redis.call('pexpire', hash, remain)
end

local function next_token(counter, t)
  local token = redis.call('incr', counter)
  local floor = t[1] * 1000000 + t[2]
  if token < floor then
    redis.call('set', counter, string.format('%d', floor))
    token = floor
  end
  return token
end

local function take_hold(hash, field, count, lease, fencing, counter, req, deadline, held)
  local token = 0
  if tonumber(count) > 1 then
    token = tonumber(held) or 0 -- a re-entry keeps the hold's token
  elseif fencing == '1' then
    -- first: a counter of another type fails here, before any write
    token = next_token(counter, redis.call('time'))
  end
  redis.call('hset', hash, field, count)
  redis.call('pexpire', hash, lease)
  -- %d: a token of 16 digits (the server's clock) would print as
  -- 1.79...e+15 with ..
  record(req, count .. ':' .. string.format('%d', token), deadline)
  return {1, count, token}
end


local function lock_exists(hash)
  local t = redis.call('type', hash)['ok']
  if t == 'hash' then
    lock_layout(hash, false)
    return true
  elseif t ~= 'none' then
    error({err = 'REDISYNC_WRONGTYPE key ' .. hash .. ' holds a ' .. t .. ', not a lock hash: not deleted'})
  end
  return false
end

local function cancel_holds(hash, prefix, ttl)
  for _, f in ipairs(redis.call('hkeys', hash)) do
    redis.call('set', prefix .. f, 'cancelled', 'px', ttl)
  end
end
