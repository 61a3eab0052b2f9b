-- prelude_wake: the lock's queue of waiting processes, by which a release
-- wakes one redisync process instead of every one (docs/wake.md). It is
-- prepended to the lock's acquire, release, handoff and leave scripts when
-- they are loaded. It defines local functions only and runs no command by
-- itself. Times come from the server's clock (TIME).
--
-- The queue is two keys in the lock's hash slot, which Redisson's scripts
-- never read:
--   waiters  a sorted set: one member per waiting redisync Client (its
--            client id), scored by when it joined (epoch ms): arrival order
--   state    a hash: each waiting Client's id -> until when it counts as
--            alive (epoch ms), refreshed by each of its attempts; and the
--            field "" -> the owner field of the latest hold redisync took
--            while Clients waited (the holder a waiter may rely on for a
--            wake-up; a holder not recorded there is foreign: a Redisson
--            client's, or a hold taken while nobody queued)
-- Each waiting Client listens on its own channel, the wake prefix and its
-- id; the Client woken is the live one that joined first.
--
-- KEYS     none of its own: the functions take the keys they touch
-- ARGV     none of its own
-- Returns  nothing. It defines:
--   wait_join(waiters, state, id, ttl, hash)
--       the Client id waits for the lock hash: it joins the queue (a Client
--       queued already keeps its place) and counts as alive for ttl ms.
--       Returns 1 when the Client is the first in the queue and the lock's
--       holder is not the one recorded (foreign): the Client then also
--       listens on Redisson's channel, where a release that knows nothing
--       of the queue publishes; 0 otherwise (the Clients behind the first
--       are woken in their turn by a redisync release, which the first
--       Client's is once it took the lock). So at most one redisync Client
--       listens there, and a release that publishes there for it wakes it
--       alone.
--   wait_took(waiters, state, id, field)
--       (field nil: a semaphore's acquisition, which records no holder)
--       after an acquisition by the owner field of the Client id, made by
--       an attempt that joined the queue (the Client waited; a first
--       attempt, which did not, leaves the queue alone: a holder it took
--       unrecorded is foreign to the first Client, which then also hears
--       its release on Redisson's channel): the Client leaves the queue;
--       when Clients still wait, field is recorded as the holder (the
--       state expiring with the queue), else both keys are deleted.
--   wait_wake(waiters, state, prefix, publish, channel, msg, probe)
--       after a release that frees the lock: publishes msg with publish
--       ("publish" or "spublish") on the channel of the live Client that
--       joined first, dropping the Clients before it whose time ran out.
--       With probe "1" (a single node, a Sentinel primary, sharded pub/sub
--       on a Cluster: where the publish's count of receivers is the whole
--       count) a Client that did not receive the message (it listens no
--       more: its process died, or it left) is dropped too and the next one
--       woken; and msg is published on Redisson's channel only when
--       somebody listens there (a Redisson waiter, or a redisync waiter
--       behind a foreign holder). With probe "0" (classic pub/sub on a
--       Cluster, where counts are per node) msg is always published there.
--       With nobody queued, msg is published on Redisson's channel, as a
--       Redisson release does (one command: what a look at who listens
--       would cost).
--   wait_next(waiters, state, prefix, publish, msg, probe, after)
--       a semaphore's chain: publishes msg on the channel of the first live
--       Client queued after the Client after (the first of the queue when
--       after is nil), and nowhere else, dropping the Clients before it
--       whose time ran out or (probe "1") that did not receive it.
--   wait_pass(waiters, state, prefix, publish, msg, probe, from)
--       the look both take: the first live Client at rank from or after it
--       is woken, the dead before it dropped; true when nobody was queued
--       at from.
--   wait_freed(waiters, state, prefix, publish, channel, msg, probe, stay, alive, hash)
--       a release's wake-up: nothing when msg is "" (the spin lock); msg on
--       channel alone when prefix is "" (a Client that does not queue);
--       else, when stay is a Client id (the releasing Client, whose own
--       callers still wait), that Client joins the queue first (for alive
--       ms), and then wait_wake.
--   wait_denied(publish, prefix, waiters, stay)
--       before anything is written: an error reply when the ACL user may
--       not publish with publish on the waiters' channels (prefix ..
--       "*"), nil otherwise (Redis 7.0+; see package lua, "Permissions").
--       With waiters (a release's queue) and no stay, an empty queue is
--       not looked at (a release wakes nobody there: the uncontended
--       lock's path saves the ACL look), and the wait_wake that follows
--       publishes on the primitive's channel alone without looking again.
-- wait_empty: wait_denied found the queue empty (nobody to wake in it)
local wait_empty = false

local function wait_clock()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

local function wait_join(waiters, state, id, ttl, hash)
  local now = wait_clock()
  ttl = tonumber(ttl)
  wait_empty = false
  redis.call('zadd', waiters, 'NX', now, id)
  redis.call('hset', state, id, now + ttl)
  if redis.call('pttl', waiters) < ttl then
    redis.call('pexpire', waiters, ttl)
  end
  if redis.call('pttl', state) < ttl then
    redis.call('pexpire', state, ttl)
  end
  local holder = redis.call('hget', state, '')
  if holder and redis.call('hexists', hash, holder) == 1 then
    return 0
  end
  if redis.call('zrange', waiters, 0, 0)[1] ~= id then
    return 0 -- a release wakes the first Client; only it need hear a foreign one
  end
  return 1
end

local function wait_took(waiters, state, id, field)
  if redis.call('exists', waiters) == 0 then
    return
  end
  redis.call('zrem', waiters, id)
  local ttl = redis.call('pttl', waiters)
  if ttl < 0 then
    -- the queue is empty now (or lost its expiry): no record is kept
    redis.call('del', waiters, state)
    return
  end
  redis.call('hdel', state, id)
  if not field then
    return -- a semaphore's: no holder to record
  end
  redis.call('hset', state, '', field)
  if redis.call('pttl', state) < ttl then
    redis.call('pexpire', state, ttl) -- never a record without an expiry
  end
end

-- wait_pass: publishes msg on the channel of the first live Client queued
-- at rank from or after it, dropping the Clients there before it whose
-- time ran out or (probe "1") that did not receive it; when it leaves the
-- queue empty, the state goes with it. Returns true when nobody was
-- queued at from (nothing looked at, nothing changed).
local function wait_pass(waiters, state, prefix, publish, msg, probe, from)
  local now
  for i = 1, 16 do
    local head = redis.call('zrange', waiters, from, from)[1]
    if not head then
      if i == 1 then
        return true
      end
      break
    end
    now = now or wait_clock()
    local alive = tonumber(redis.call('hget', state, head))
    if alive and alive >= now then
      if redis.call(publish, prefix .. head, msg) > 0 or probe ~= '1' then
        return false
      end
    end
    redis.call('zrem', waiters, head) -- the next one moves up to from
    redis.call('hdel', state, head)
  end
  if redis.call('exists', waiters) == 0 then
    redis.call('del', state) -- every Client queued is gone: the record with them
  end
  return false
end

local function wait_wake(waiters, state, prefix, publish, channel, msg, probe)
  if wait_empty or wait_pass(waiters, state, prefix, publish, msg, probe, 0) then
    -- nobody queued (the uncontended lock): Redisson's message, as
    -- Redisson publishes it, for whoever listens
    redis.call(publish, channel, msg)
    return
  end
  if probe == '1' then
    local sub = 'numsub'
    if publish == 'spublish' then
      sub = 'shardnumsub'
    end
    if redis.call('pubsub', sub, channel)[2] == 0 then
      return
    end
  end
  redis.call(publish, channel, msg)
end

local function wait_next(waiters, state, prefix, publish, msg, probe, after)
  local from = 0
  if after then
    local rank = redis.call('zrank', waiters, after)
    if rank then
      from = rank + 1
    end
  end
  if wait_pass(waiters, state, prefix, publish, msg, probe, from) and redis.call('exists', waiters) == 0 then
    redis.call('del', state)
  end
end

local function wait_freed(waiters, state, prefix, publish, channel, msg, probe, stay, alive, hash)
  if msg == '' then
    return
  end
  if (prefix or '') == '' then
    redis.call(publish, channel, msg)
    return
  end
  if (stay or '') ~= '' then
    wait_join(waiters, state, stay, alive, hash)
  end
  wait_wake(waiters, state, prefix, publish, channel, msg, probe)
end

local function wait_denied(publish, prefix, waiters, stay)
  if waiters and (prefix or '') ~= '' and (stay or '') == '' and redis.call('exists', waiters) == 0 then
    wait_empty = true -- nobody to publish to on the waiters' channels
    return nil
  end
  if redis.acl_check_cmd and (publish or '') ~= '' and (prefix or '') ~= '' and not redis.acl_check_cmd(publish, prefix .. 'x', '0') then
    return redis.error_reply('NOPERM this user has no permissions to ' .. publish .. ' to ' .. prefix .. '*: nothing was changed')
  end
end
