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
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

type unlockOptions struct {
	redis string
	force bool
	yes   bool
}

const unlockHead = `usage: redisync unlock -force [-yes] [-redis URL] NAME

Unlock frees the lock or read-write lock stored under NAME whoever holds
it, and wakes the clients waiting for it: the holders' next renewal or
unlock finds it gone (redisync reports ErrLockLost / ErrNotHeld, Redisson
an IllegalMonitorStateException). Use it for a lock whose holder is stuck;
a crashed holder's lock frees itself when its lease ends.

It first shows the lock (as inspect does) and asks for confirmation on the
terminal: "y" or "yes" unlocks, any other answer leaves the lock alone and
exits with status 1. -yes skips the question, and is required when stdin
is not a terminal. -force is always required. Semaphores and latches have no
holder to free and are refused.

The server is the -redis URL, else $REDIS_URL.
`

func unlockFlags() (*flag.FlagSet, *unlockOptions) {
	o := &unlockOptions{}
	fs := newFlagSet("unlock", unlockHead)
	fs.StringVar(&o.redis, "redis", "", "Redis `URL` (redis://, rediss://, redis-sentinel://; see 'redisync help'); default $REDIS_URL")
	fs.BoolVar(&o.force, "force", false, "required: free the lock whoever holds it")
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	return fs, o
}

// isTerminal reports whether r is an interactive terminal; tests replace it.
var isTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func runUnlock(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, o := unlockFlags()
	name, err := parseName(fs, args, stdout)
	if err != nil {
		return err
	}
	switch {
	case !o.force:
		return usagef("-force is required: unlock frees the lock whoever holds it")
	case !o.yes && !isTerminal(stdin):
		return usagef("stdin is not a terminal, so unlock cannot ask for confirmation: pass -yes to force-unlock %q", name)
	}
	srv, err := dialFor(ctx, o.redis)
	if err != nil {
		return err
	}
	rdb := srv.rdb
	defer rdb.Close()

	r, err := inspect(ctx, rdb, name, "")
	switch {
	case errors.Is(err, errNotFound):
		return fmt.Errorf("%q is not locked: no such key", name)
	case err != nil:
		return err
	case r.Type != kindLock && r.Type != kindRWLock:
		return fmt.Errorf("%q is %s: unlock frees only locks and read-write locks", name, r.Type.withArticle())
	case !r.Exists:
		return fmt.Errorf("%q is not locked", name)
	}
	if !o.yes {
		if err := r.writeText(stderr); err != nil {
			return err
		}
		ok, err := confirm(ctx, stdin, stderr, fmt.Sprintf("Force-unlock %s %q, held by %s?", r.Type.title(), name, plural(owners(r.Holders), "owner")))
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not unlocked: confirmation declined")
		}
	}
	existed, err := forceUnlock(ctx, rdb, r.Type, name)
	if err != nil {
		return err
	}
	if !existed {
		fmt.Fprintf(stdout, "%s %q was released meanwhile; nothing to do\n", r.Type.title(), name)
		return nil
	}
	fmt.Fprintf(stdout, "force-unlocked %s %q (was held by %s)\n", r.Type.title(), name, holdersText(r.Holders))
	fmt.Fprintf(stdout, "published the release on %s to %s\n", r.Channel, waitingClients(r.Waiters))
	return nil
}

// forceUnlock frees the lock or read-write lock name through the library,
// which deletes it and publishes its release so waiters wake at once.
func forceUnlock(ctx context.Context, rdb redis.UniversalClient, k kind, name string) (bool, error) {
	c := redisync.New(rdb)
	defer c.Close()
	if k == kindRWLock {
		return rwlock.New(c, name).ForceUnlock(ctx)
	}
	return rlock.New(c, name).ForceUnlock(ctx)
}

// confirm asks question on stderr and reads the answer from stdin: "y" or
// "yes" (any case) confirms, any other answer declines (false, nil). It
// fails when stdin ends without an answer or ctx ends first.
func confirm(ctx context.Context, stdin io.Reader, stderr io.Writer, question string) (bool, error) {
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
			return false, errors.New("not unlocked: no answer on stdin (pass -yes to skip the question)")
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
