-- lock_wait_leave: a Client stops waiting for a lock (its last caller's
-- wait ended: cancelled, timed out, or its Client closing): it leaves the
-- lock's queue of waiting Clients (prelude_wake). When it was the first in
-- the queue and the lock is free, a release may have woken it just before:
-- that wake-up is passed on to the next live Client, so that a Client
-- leaving never stalls the lock. When it was the first and the lock is
-- held, the next Client is told that it is first now, so that it listens
-- on the lock's channel too if the holder is foreign (its attempt says).
-- Idempotent: a Client not in the queue changes nothing.
--
-- KEYS[1]  lock: lock hash
-- KEYS[2]  channel: lock channel (redisson_lock__channel:{name})
-- KEYS[3]  waiters: the lock's queue of waiting Clients (prelude_wake)
-- KEYS[4]  waitState: the queue's state (prelude_wake)
-- ARGV[1]  client string: the Client's id
-- ARGV[2]  wakePrefix string: the waiting Clients' channels: this prefix and a Client's id
-- ARGV[3]  publish string: publish command: "publish", or "spublish" for sharded pub/sub on
--          a Redis Cluster
-- ARGV[4]  probe bool: "1" where a publish counts every receiver (prelude_wake's wait_wake)
-- ARGV[5]  message? string: the message a wake-up passed on publishes: a release's ("0" when
--          left out; "1" for a read-write lock, whose write release publishes it)
--
-- Returns 1 when the Client left the queue, 0 when it was not in it.
--
-- Reply    left
local denied = wait_denied(ARGV[3], ARGV[2])
if denied then
  return denied
end
local first = redis.call('zrange', KEYS[3], 0, 0)[1]
if redis.call('zrem', KEYS[3], ARGV[1]) == 0 then
  redis.call('hdel', KEYS[4], ARGV[1])
  return 0
end
redis.call('hdel', KEYS[4], ARGV[1])
if redis.call('exists', KEYS[3]) == 0 then
  redis.call('del', KEYS[4]) -- the last Client queued left: the record with it
  return 1
end
if first == ARGV[1] then
  if redis.call('exists', KEYS[1]) == 0 then
    wait_wake(KEYS[3], KEYS[4], ARGV[2], ARGV[3], KEYS[2], ARGV[5] or '0', ARGV[4])
  else
    local head = redis.call('zrange', KEYS[3], 0, 0)[1]
    if head then
      redis.call(ARGV[3], ARGV[2] .. head, ARGV[5] or '0')
    end
  end
end
return 1
