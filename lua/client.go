package lua

// Scripts of the client (internal/core): the registration of an explicit
// client id.
var (
	// ClientRegister registers or renews a client id; see client_register.lua.
	ClientRegister = load("client_register.lua")
	// ClientUnregister frees a client id; see client_unregister.lua.
	ClientUnregister = load("client_unregister.lua")
)
