-- client_unregister: free a client id registered by client_register, if
-- this instance holds it (Close), so that another instance may use it at
-- once.
--
-- KEYS[1]  registration key (keys.ClientRegistration of the id)
-- ARGV[1]  this instance's value
--
-- Returns 1 when the registration was this instance's and is deleted;
--         0 otherwise: nothing changed.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
