package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
)

type deleteOptions struct {
	redis  string
	force  bool
	yes    bool
	prefix string // put before NAME (-prefix), as redisync.WithKeyPrefix does
}

const deleteHead = `usage: redisync delete [-force] [-yes] [-prefix P] [-redis URL] NAME

Delete removes the election called NAME (package election) from Redis: the
keys it keeps without an expiry, its leader record {NAME}:leader, the
records' log {NAME}:leaders, the candidates' queue
redisson_lock_queue:{NAME} and their deadlines redisson_lock_timeout:{NAME},
and the fencing counter redisson_lock_token:{NAME}. Use it for an election
no service runs any more. NAME may also be the election's leader record or
log, as inspect shows them.

While someone holds the election's lock (its leader, or an owner that is
no candidate) delete refuses, says who holds it, and changes nothing.
-force deletes the lock too: the leader's leadership ends (its Context,
with ErrLockLost) at its next renewal. Candidates still waiting lose their
places; the first live one is woken and leads. Terms keep growing after
the counter is gone: the next term is at least the server's clock in
microseconds, above every term issued before.

It first shows the election (as inspect does) and asks for confirmation on
the terminal: "y" or "yes" deletes, any other answer leaves it alone and
exits with status 1. -yes skips the question, and is required when stdin
is not a terminal. When nothing is stored under NAME there is nothing to
delete, and delete exits with status 0. A name that is another primitive
(a lock, a semaphore, ...) is refused and left intact.

The server is the -redis URL, else $REDIS_URL.
`

func deleteFlags() (*flag.FlagSet, *deleteOptions) {
	o := &deleteOptions{}
	fs := newFlagSet("delete", deleteHead)
	fs.StringVar(&o.redis, "redis", "", "Redis `URL` (redis://, rediss://, redis-sentinel://; see 'redisync help'); default $REDIS_URL")
	fs.BoolVar(&o.force, "force", false, "delete also while someone leads, ending its leadership")
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	prefixFlag(fs, &o.prefix)
	return fs, o
}

func runDelete(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, o := deleteFlags()
	name, err := parseName(fs, args, stdout)
	if err != nil {
		return err
	}
	if name, err = withPrefix(o.prefix, name); err != nil {
		return err
	}
	if !o.yes && !isTerminal(stdin) {
		return fmt.Errorf("stdin is not a terminal, so delete cannot ask for confirmation: pass -yes to delete %q", name)
	}
	srv, err := dialFor(ctx, o.redis)
	if err != nil {
		return err
	}
	rdb := srv.rdb
	defer rdb.Close()

	r, err := deletable(ctx, rdb, name, o.force)
	if err != nil || r == nil {
		if r == nil && err == nil {
			fmt.Fprintf(stdout, "nothing stored under %q: nothing to delete\n", name)
		}
		return err
	}
	if !o.yes {
		if err := askDelete(ctx, r, stdin, stderr); err != nil {
			return err
		}
	}
	return deleteElection(ctx, rdb, r, o.force, stdout)
}

// deletable inspects name and returns its report if it is an election
// that delete may remove: free, or force. It returns nil, nil when
// nothing is stored under name.
func deletable(ctx context.Context, rdb redis.UniversalClient, name string, force bool) (*Report, error) {
	r, err := inspect(ctx, rdb, name, "", false)
	switch {
	case errors.Is(err, errNotFound):
		return nil, nil
	case errors.Is(err, errNotPrimitive):
		return nil, fmt.Errorf("%w; not deleted, left as it is", err)
	case err != nil:
		return nil, err
	case r.Type != kindElection:
		return nil, fmt.Errorf("%q is %s: delete removes elections only; nothing deleted", name, r.Type.withArticle())
	case r.Exists && !force:
		return nil, fmt.Errorf("election %q: its lock is held by %s: not deleted; resign first, or pass -force to delete it all the same (the leadership ends)",
			r.Name, holderText(r))
	}
	return r, nil
}

// askDelete shows the election r reports on stderr and asks whether to
// delete it; an error unless the answer is yes.
func askDelete(ctx context.Context, r *Report, stdin io.Reader, stderr io.Writer) error {
	if err := r.writeText(stderr); err != nil {
		return err
	}
	q := fmt.Sprintf("Delete election %q (%s)?", r.Name, plural(len(r.Election.Keys), "key"))
	if r.Exists {
		q = fmt.Sprintf("Delete election %q (%s), ending the leadership of %s?", r.Name, plural(len(r.Election.Keys), "key"), holderText(r))
	}
	ok, err := confirm(ctx, stdin, stderr, q, "not deleted")
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("not deleted: confirmation declined")
	}
	return nil
}

// deleteElection deletes the election r reports through the library
// (ForceDelete with force) and says what it deleted.
func deleteElection(ctx context.Context, rdb redis.UniversalClient, r *Report, force bool, stdout io.Writer) error {
	c := redisync.New(rdb)
	defer c.Close()
	e := election.New(c, r.Name)
	del := e.Delete
	if force {
		del = e.ForceDelete
	}
	deleted, err := del(ctx)
	switch {
	case errors.Is(err, election.ErrLeading):
		return fmt.Errorf("%w (won meanwhile); pass -force to delete it all the same", err)
	case err != nil:
		return err
	case !deleted:
		fmt.Fprintf(stdout, "election %q was deleted meanwhile; nothing to do\n", r.Name)
		return nil
	}
	names := make([]string, len(r.Election.Keys))
	for i, k := range r.Election.Keys {
		names[i] = k.Key
	}
	fmt.Fprintf(stdout, "deleted election %q: %s\n", r.Name, strings.Join(names, ", "))
	if r.Exists {
		fmt.Fprintf(stdout, "its lock was held by %s, whose leadership ends at its next renewal\n", holderText(r))
	}
	return nil
}

// holderText names who holds an election's lock: the leader with its
// value and term, or an owner that is no candidate.
func holderText(r *Report) string {
	el := r.Election
	if el.Holder == nil {
		return "nobody"
	}
	h := fmt.Sprintf("client %s owner token %s", el.Holder.ClientID, tokenText(el.Holder.OwnerToken))
	if el.Leading {
		return fmt.Sprintf("the leader %q (term %d, %s)", el.Leader.Value, el.Leader.Term, h)
	}
	return h + ", which wrote no leader record"
}
