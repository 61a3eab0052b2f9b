// Package keyevents streams the keyspace notifications of one lock's key
// to its user as redisync.KeyEvent values: the Events method of every
// lock kind (rlock's Lock, FairLock and SpinLock, rwlock's RWLock) is
// Stream. The subscription is the client's pub/sub multiplexer's
// ([pubsub.Mux.Keyspace]), on the node that holds the key.
package keyevents
