-- client_unregister: free a client id registered by client_register, if
-- this instance holds it (Close), so that another instance may use it at
-- once.
--
-- KEYS[1]  registration: registration key (keys.ClientRegistration of the id)
-- ARGV[1]  value string: this instance's value
--
-- Returns 1 when the registration was this instance's and is deleted;
--         0 otherwise: nothing changed.
--
-- Reply    code
-- Code     Unregistered = 1: the registration was this instance's and is deleted
-- Code     NotOwned = 0: nothing changed
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
