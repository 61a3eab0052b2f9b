package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

type unlockOptions struct {
	redis string
	force bool
	yes   bool
	any   bool
	// prefix is put before NAME (-prefix), as redisync.WithKeyPrefix does.
	prefix string
}

const unlockHead = `usage: redisync unlock -force [-yes] [-any] [-prefix P] [-redis URL] NAME

Unlock frees the lock, fair lock or read-write lock stored under NAME
whoever holds it, and wakes the clients waiting for it: the holders' next
renewal or unlock finds it gone (redisync reports ErrLockLost /
ErrNotHeld, Redisson an IllegalMonitorStateException). Use it for a lock
whose holder is stuck; a crashed holder's lock frees itself when its
lease ends.

A fair lock's release wakes only the owner whose turn it is: unlock drops
the dead owners at the head of the queue (their deadline passed), wakes
the owner then at the head, leaves the rest of the queue as it is, and
says which owner it woke.

It first shows the lock (as inspect does) and asks for confirmation on the
terminal: "y" or "yes" unlocks, any other answer leaves the lock alone and
exits with status 1. -yes skips the question, and is required when stdin
is not a terminal (without it unlock changes nothing and exits with
status 1). -force is always required.

Unlock frees only what is laid out as a lock: a hash whose fields are
owners "<client id>:<owner token>" holding hold counts (a read-write lock's also a
mode field, read or write, and its writer "<client id>:<owner token>:write").
Anything else is refused and left intact: a key that is not a
redisync/Redisson primitive (an application's hash such as a user
profile, a list, a string that is not a count), and semaphores, latches
and rate limiters, which have no holder to free. -any force-unlocks a
hash of any other layout anyway: it deletes the hash. Use it only for a
lock whose fields some other client wrote in another form.

The server is the -redis URL, else $REDIS_URL.
`

func unlockFlags() (*flag.FlagSet, *unlockOptions) {
	o := &unlockOptions{}
	fs := newFlagSet("unlock", unlockHead)
	fs.StringVar(&o.redis, "redis", "", "Redis `URL` (redis://, rediss://, redis-sentinel://; see 'redisync help'); default $REDIS_URL")
	fs.BoolVar(&o.force, "force", false, "required: free the lock whoever holds it")
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	fs.BoolVar(&o.any, "any", false, "also force-unlock (delete) a hash that is not laid out as a lock")
	prefixFlag(fs, &o.prefix)
	return fs, o
}

// isTerminal reports whether r is an interactive terminal; tests replace
// it. A character device is not enough: /dev/null is one, and a question
// asked there would read end-of-file as the answer, so the file must
// answer a terminal's ioctl (isTTY).
var isTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTTY(f.Fd())
}

func runUnlock(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, o := unlockFlags()
	name, err := parseName(fs, args, stdout)
	if err != nil {
		return err
	}
	if name, err = withPrefix(o.prefix, name); err != nil {
		return err
	}
	switch {
	case !o.force:
		return usagef("-force is required: unlock frees the lock whoever holds it")
	case !o.yes && !isTerminal(stdin):
		// The command line is right; what is missing is a terminal to ask
		// on: a failure (1), not a usage error (2).
		return fmt.Errorf("stdin is not a terminal, so unlock cannot ask for confirmation: pass -yes to force-unlock %q", name)
	}
	srv, err := dialFor(ctx, o.redis)
	if err != nil {
		return err
	}
	rdb := srv.rdb
	defer rdb.Close()

	r, err := unlockable(ctx, rdb, name, o.any)
	if err != nil {
		return err
	}
	if !o.yes {
		if err := r.writeText(stderr); err != nil {
			return err
		}
		ok, err := confirm(ctx, stdin, stderr, fmt.Sprintf("Force-unlock %s %q, held by %s?", r.Type.title(), name, plural(owners(r.Holders), "owner")), "not unlocked")
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not unlocked: confirmation declined")
		}
	}
	return unlockReport(ctx, rdb, r, o.any, stdout)
}

// unlockable inspects name and returns its report if it is a lock, fair
// lock or read-write lock that is held; with anyHash, also if it is a hash
// of another layout (not a rate limiter's).
func unlockable(ctx context.Context, rdb redis.UniversalClient, name string, anyHash bool) (*Report, error) {
	r, err := inspect(ctx, rdb, name, "", anyHash)
	if err == nil && r.Type == kindElection {
		// An election's lock is a fair lock: unlock frees it (the
		// leadership ends) and wakes the next candidate.
		r, err = inspect(ctx, rdb, r.Name, kindFair, anyHash)
	}
	switch {
	case errors.Is(err, errNotFound):
		return nil, fmt.Errorf("%q is not locked: no such key", name)
	case errors.Is(err, errNotLockHash):
		return nil, fmt.Errorf("%w; not unlocked, left as it is (-any would delete it)", err)
	case errors.Is(err, errNotPrimitive):
		return nil, fmt.Errorf("%w; not unlocked, left as it is", err)
	case err != nil:
		return nil, err
	case !r.Type.isLock():
		return nil, fmt.Errorf("%q is %s: unlock frees only locks and read-write locks", name, r.Type.withArticle())
	case !r.Exists:
		return nil, fmt.Errorf("%q is not locked", name)
	}
	return r, nil
}

// unlockReport force-unlocks the lock r reports and says what it did: whom
// it freed and whom it woke. anyHash is -any.
func unlockReport(ctx context.Context, rdb redis.UniversalClient, r *Report, anyHash bool, stdout io.Writer) error {
	if r.Type == kindFair {
		return unlockFair(ctx, rdb, r, anyHash, stdout)
	}
	existed, err := forceUnlock(ctx, rdb, r.Type, r.Name, anyHash)
	switch {
	case err != nil:
		return err
	case !existed:
		fmt.Fprintf(stdout, "%s %q was released meanwhile; nothing to do\n", r.Type.title(), r.Name)
		return nil
	}
	fmt.Fprintf(stdout, "force-unlocked %s %q (was held by %s)\n", r.Type.title(), r.Name, holdersText(r.Holders))
	fmt.Fprintf(stdout, "published the release on %s to %s\n", r.Channel, waitingClients(r.Waiters))
	return nil
}

// unlockFair force-unlocks the fair lock r reports. Its queue is read
// again first, not taken from r: a person's answer may have taken long.
// The script wakes the head of the queue also when the lock was released
// meanwhile.
func unlockFair(ctx context.Context, rdb redis.UniversalClient, r *Report, anyHash bool, stdout io.Writer) error {
	next, err := readFairNext(ctx, rdb, r.Name)
	if err != nil {
		return err
	}
	existed, err := forceUnlock(ctx, rdb, kindFair, r.Name, anyHash)
	if err != nil {
		return err
	}
	if existed {
		fmt.Fprintf(stdout, "force-unlocked %s %q (was held by %s)\n", r.Type.title(), r.Name, holdersText(r.Holders))
	} else {
		fmt.Fprintf(stdout, "%s %q was released meanwhile\n", r.Type.title(), r.Name)
	}
	next.write(stdout)
	return nil
}

// forceUnlock frees the lock, fair lock or read-write lock name through
// the library, which deletes it and publishes its release so waiters wake
// at once (for a fair lock, the waiter at the head of the queue only).
// The library refuses a hash that is not laid out as a lock
// (ErrWrongType); with anyHash (-any) such a hash is deleted here, and the
// release published on the kind's channel for any client still waiting.
func forceUnlock(ctx context.Context, rdb redis.UniversalClient, k kind, name string, anyHash bool) (bool, error) {
	c := redisync.New(rdb)
	defer c.Close()
	var (
		existed bool
		err     error
	)
	switch k {
	case kindRWLock:
		existed, err = rwlock.New(c, name).ForceUnlock(ctx)
	case kindFair:
		existed, err = rlock.NewFair(c, name).ForceUnlock(ctx)
	default:
		existed, err = rlock.New(c, name).ForceUnlock(ctx)
	}
	if !anyHash || !errors.Is(err, redisync.ErrWrongType) {
		return existed, err
	}
	msg := "0" // a lock's release
	if k == kindRWLock {
		msg = "1" // a write release: every reader may get in
	}
	n, err := rdb.Del(ctx, name).Result()
	if err != nil {
		return false, err
	}
	if err := rdb.Publish(ctx, k.channel(name), msg).Err(); err != nil {
		return true, fmt.Errorf("deleted %q, but publishing its release failed: %w", name, err)
	}
	return n > 0, nil
}

// fairNext is whom a fair lock's force unlock wakes, as read just before
// it: the script drops the dead owners at the head of the queue, then
// publishes the release on the channel of the owner then at the head.
type fairNext struct {
	name    string
	head    *QueueEntry // nil when no live owner is queued
	dropped int         // dead owners before head
	subs    int64       // clients subscribed to head's channel
}

// readFairNext reads the fair lock name's queue and finds whom a force
// unlock wakes.
func readFairNext(ctx context.Context, rdb redis.UniversalClient, name string) (*fairNext, error) {
	s, err := readSnapshot(ctx, rdb, name)
	if err != nil {
		return nil, err
	}
	n := &fairNext{name: name}
	for _, e := range fairQueue(s.queue, s.deadlines, s.now) {
		if !e.Dead {
			n.head = &e
			n.subs = s.subs[keys.FairChannel(name, e.Owner)]
			break
		}
		n.dropped++
	}
	return n, nil
}

// write says whom the force unlock woke.
func (n *fairNext) write(w io.Writer) {
	if n.dropped > 0 {
		fmt.Fprintf(w, "dropped %s from the head of the queue\n", plural(n.dropped, "dead owner"))
	}
	if n.head == nil {
		fmt.Fprintln(w, "no owner waits in the queue: nobody to wake")
		return
	}
	fmt.Fprintf(w, "woke the head of the queue, client %s owner token %s: published the release on %s (%s subscribed)\n",
		n.head.ClientID, tokenText(n.head.OwnerToken), keys.FairChannel(n.name, n.head.Owner), clients(n.subs))
}

// confirm asks question on stderr and reads the answer from stdin: "y" or
// "yes" (any case) confirms, any other answer declines (false, nil). It
// fails when stdin ends without an answer (an error starting with
// undone, "not unlocked" say) or ctx ends first.
func confirm(ctx context.Context, stdin io.Reader, stderr io.Writer, question, undone string) (bool, error) {
	fmt.Fprintf(stderr, "%s [y/N] ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr)
		return false, ctx.Err()
	case line := <-answer:
		a := strings.ToLower(strings.TrimSpace(line))
		if line == "" {
			fmt.Fprintln(stderr)
			return false, errors.New(undone + ": no answer on stdin (pass -yes to skip the question)")
		}
		return a == "y" || a == "yes", nil
	}
}

func holdersText(hs []Holder) string {
	if len(hs) == 0 {
		return "nobody"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		s := "client " + h.ClientID
		if h.OwnerToken != "" {
			s += " owner token " + h.OwnerToken
		}
		if h.Side != "" {
			s += " (" + h.Side + ")"
		}
		parts[i] = fmt.Sprintf("%s ×%d", s, h.Count)
	}
	return strings.Join(parts, ", ")
}

func waitingClients(n int64) string {
	if n == 1 {
		return "1 waiting client"
	}
	return fmt.Sprintf("%d waiting clients", n)
}
