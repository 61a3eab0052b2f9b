// Package errs holds what every layer of the engine says about failures:
// the sentinel errors the root package re-exports (ErrNotHeld,
// ErrLockLost, ...), and the few questions asked of an error on the way
// back from Redis: was it a reply (IsReply), did Redis run nothing
// (NotRun), was the request refused as late (RefusedLate), what does a
// wrong-type reply mean (ReplyError), which refusals (NOPERM, NOAUTH, OOM)
// are (Refused), and the error of a wait ended by its
// context (CtxError). It imports nothing of redisync: every other internal
// package may import it.
package errs
