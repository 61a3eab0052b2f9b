-- client_register: register, or renew the registration of, a client id
-- given explicitly (redisync.WithID): the key holds the random value of the
-- one live Client instance that uses the id, with a TTL that its renewals
-- keep from running out. A second instance with the same id finds another
-- value and is refused; once the first closes (client_unregister) or dies
-- (the TTL runs out), the id is free.
--
-- KEYS[1]  registration: registration key (keys.ClientRegistration of the id)
-- ARGV[1]  value string: this instance's value (random)
-- ARGV[2]  ttlMillis int64: TTL in milliseconds
--
-- Returns 1 when the id is this instance's (registered now, or renewed);
--         0 when another instance holds it: nothing changed.
--
-- Reply    code
-- Code     Registered = 1: the id is this instance's
-- Code     Taken = 0: another instance holds it
local v = redis.call('get', KEYS[1])
if v and v ~= ARGV[1] then
  return 0
end
redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
return 1
