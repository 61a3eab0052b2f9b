package election_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

// One candidate leads, proclaims, resigns; the next candidate is woken
// and leads with a larger term; Leader reports each.
func TestCampaignProclaimResign(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	a := election.New(clienttest.New(t, s.Client(t)), name)
	b := election.New(clienttest.New(t, s.Client(t)), name)

	_, err := a.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)

	la, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, la.Err())
	assert.Positive(t, la.Term())
	lead, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", lead.Value)
	assert.Equal(t, la.Term(), lead.Term)
	assert.WithinDuration(t, time.Now(), lead.Since, 2*time.Second)

	require.NoError(t, la.Proclaim(ctx, "a2"))
	lead2, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, election.Leader{Value: "a2", Term: la.Term(), Since: lead.Since}, lead2)

	won := make(chan *election.Leadership, 1)
	go func() {
		lb, err := b.Campaign(ctx, "b")
		if assert.NoError(t, err) {
			won <- lb
		}
	}()
	select {
	case <-won:
		t.Fatal("b leads while a does")
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	require.NoError(t, la.Resign(ctx))
	assert.ErrorIs(t, la.Err(), redisync.ErrNotHeld)
	assert.ErrorIs(t, context.Cause(la.Context()), redisync.ErrNotHeld)
	lb := <-won
	t.Logf("takeover after Resign: %v", time.Since(start))
	assert.Greater(t, lb.Term(), la.Term())
	lead3, err := a.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", lead3.Value)

	// The resigned leader cannot proclaim any more, nor resign twice.
	assert.ErrorIs(t, la.Proclaim(ctx, "stale"), redisync.ErrNotHeld)
	assert.ErrorIs(t, la.Resign(ctx), redisync.ErrNotHeld)
	require.NoError(t, lb.Resign(ctx))
	_, err = a.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader)
}

// A leader whose lock was taken from it (here: force-unlocked, then won
// by another) cannot overwrite the new leader's value, and its
// leadership ends with ErrLockLost.
func TestStaleLeaderCannotProclaim(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	ca := clienttest.New(t, s.Client(t))
	a := election.New(ca, name)
	b := election.New(clienttest.New(t, s.Client(t)), name)
	la, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	// Another client deletes the lock (as an operator's forced unlock
	// would); a's client has not noticed yet.
	_, err = rlock.New(clienttest.New(t, s.Client(t)), name).ForceUnlock(ctx)
	require.NoError(t, err)
	lb, err := b.Campaign(ctx, "b")
	require.NoError(t, err)
	assert.Greater(t, lb.Term(), la.Term())
	err = la.Proclaim(ctx, "a-stale")
	require.ErrorIs(t, err, redisync.ErrNotHeld)
	assert.ErrorIs(t, la.Err(), redisync.ErrLockLost)
	lead, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, election.Leader{Value: "b", Term: lb.Term(), Since: lead.Since}, lead)
	require.NoError(t, lb.Resign(ctx))
}

// The election's lock is a lock in Redisson's layout: while a candidate
// leads, an RLock on the name is busy (and its fencing counter is the
// term); while an RLock holds it, candidates wait.
func TestRedissonLayout(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	c := clienttest.New(t, s.Client(t))
	e := election.New(c, name)
	l, err := e.Campaign(ctx, "x")
	require.NoError(t, err)
	rdb := s.Client(t)
	fields, err := rdb.HKeys(ctx, name).Result()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	assert.Regexp(t, `^`+c.ID()+`:\d+$`, fields[0])
	tok, err := rdb.Get(ctx, "redisson_lock_token:{"+name+"}").Int64()
	require.NoError(t, err)
	assert.Equal(t, tok, l.Term())
	rl := rlock.New(clienttest.New(t, s.Client(t)), name)
	ok, err := rl.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, l.Resign(ctx))

	require.NoError(t, rl.Lock(ctx))
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = e.Campaign(cctx, "y")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The cancelled campaign left no place in the queue.
	n, err := rdb.LLen(ctx, "redisson_lock_queue:{"+name+"}").Result()
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, rl.Unlock(ctx))
}

// Closing the leader's Client ends its leadership (cause wraps
// ErrLockLost and ErrClosed); the lock stays until its lease runs out,
// and the next candidate leads then.
func TestClientCloseEndsLeadership(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	const lease = time.Second
	ca := redisync.New(s.Client(t), redisync.WithWatchdogTimeout(lease))
	a := election.New(ca, name)
	b := election.New(clienttest.New(t, s.Client(t)), name)
	la, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	won := make(chan time.Time, 1)
	go func() {
		if _, err := b.Campaign(ctx, "b"); assert.NoError(t, err) {
			won <- time.Now()
		}
	}()
	time.Sleep(200 * time.Millisecond)
	closed := time.Now()
	require.NoError(t, ca.Close())
	<-la.Done()
	assert.ErrorIs(t, la.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, la.Err(), redisync.ErrClosed)
	took := (<-won).Sub(closed)
	t.Logf("takeover after the leader's Client closed without releasing (lease %v): %v", lease, took)
	assert.Less(t, took, lease+3*time.Second)
}

// Observe delivers the current leader, then each new leader once in term
// order, and a Proclaim's new value; an observer that stops receiving for
// a while still gets every leader it missed, from the log.
func TestObserve(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	c := clienttest.New(t, s.Client(t))
	e := election.New(c, name)
	l0, err := e.Campaign(ctx, "v0")
	require.NoError(t, err)
	obs := election.New(clienttest.New(t, s.Client(t)), name).Observe(ctx)
	first := <-obs
	assert.Equal(t, "v0", first.Value)
	require.NoError(t, l0.Proclaim(ctx, "v0b"))
	assert.Equal(t, election.Leader{Value: "v0b", Term: l0.Term(), Since: first.Since}, <-obs)
	require.NoError(t, l0.Resign(ctx))
	// Five leaders while nobody receives: the observer is blocked on the
	// first and must read the others from the log.
	var want []election.Leader
	for i := 1; i <= 5; i++ {
		l, err := e.Campaign(ctx, fmt.Sprintf("v%d", i))
		require.NoError(t, err)
		want = append(want, election.Leader{Value: fmt.Sprintf("v%d", i), Term: l.Term()})
		require.NoError(t, l.Resign(ctx))
	}
	for _, w := range want {
		select {
		case got := <-obs:
			assert.Equal(t, w.Value, got.Value)
			assert.Equal(t, w.Term, got.Term)
		case <-time.After(10 * time.Second):
			t.Fatalf("observer never delivered %v", w)
		}
	}
	cancel()
	for range obs { // closed when ctx ends
	}
}

func TestInvalid(t *testing.T) {
	ctx := context.Background()
	c := clienttest.New(t, redistest.Shared(t).Client(t))
	_, err := election.New(c, "").Campaign(ctx, "x")
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
	_, err = election.New(c, "").Leader(ctx)
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
	_, ok := <-election.New(c, "").Observe(ctx)
	assert.False(t, ok)
	_, err = election.New(nil, "x").Leader(ctx)
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
}

// referee checks, as candidates win, that no two leaderships' contexts
// are live at once and that terms strictly increase.
type referee struct {
	mu   sync.Mutex
	live []*election.Leadership
	won  []election.Leader
	bad  []string
}

func (r *referee) win(l *election.Leadership, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	keep := r.live[:0]
	for _, o := range r.live {
		if o.Err() == nil {
			r.bad = append(r.bad, fmt.Sprintf("term %d won while term %d was live", l.Term(), o.Term()))
			keep = append(keep, o)
		}
	}
	r.live = append(keep, l)
	if n := len(r.won); n > 0 && l.Term() <= r.won[n-1].Term {
		r.bad = append(r.bad, fmt.Sprintf("term %d after term %d", l.Term(), r.won[n-1].Term))
	}
	r.won = append(r.won, election.Leader{Value: value, Term: l.Term()})
}

// candidate is one campaigning process: a Client through its own proxy,
// replaced when the test kills it.
type candidate struct {
	t     *testing.T
	id    int
	newRD func() (redis.UniversalClient, *redistest.Proxy)
	lease time.Duration
}

// run campaigns until ctx ends; each time it wins it resigns after a
// short while, or its Client is closed without releasing (killed), or its
// network is cut until its leadership ends (stalled).
func (cd *candidate) run(ctx context.Context, name string, ref *referee, counts *[3]int, mu *sync.Mutex) {
	for round := 0; ctx.Err() == nil; round++ {
		rdb, proxy := cd.newRD()
		c := redisync.New(rdb, redisync.WithWatchdogTimeout(cd.lease), redisync.WithRecheckInterval(time.Second))
		e := election.New(c, name)
		for ctx.Err() == nil {
			value := fmt.Sprintf("c%d-r%d-%d", cd.id, round, rand.Int64())
			l, err := e.Campaign(ctx, value)
			if err != nil {
				if ctx.Err() == nil {
					cd.t.Errorf("candidate %d: campaign: %v", cd.id, err)
				}
				break
			}
			ref.win(l, value)
			time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
			action := rand.IntN(10)
			if proxy == nil && action >= 8 {
				action = 0
			}
			mu.Lock()
			switch {
			case action < 6:
				counts[0]++
			case action < 8:
				counts[1]++
			default:
				counts[2]++
			}
			mu.Unlock()
			switch {
			case action < 6: // resign
				if err := l.Resign(context.Background()); err != nil && l.Context().Err() == nil {
					cd.t.Errorf("candidate %d: resign: %v", cd.id, err)
				}
				continue
			case action < 8: // killed: the Client closes without releasing
				_ = c.Close()
				<-l.Done()
			default: // stalled: the network is cut until the leadership ends
				proxy.Block()
				select {
				case <-l.Done():
				case <-time.After(cd.lease + 5*time.Second):
					cd.t.Errorf("candidate %d: leadership still live %v after its network was cut", cd.id, cd.lease+5*time.Second)
				}
				proxy.Unblock()
				_ = c.Close()
			}
			break
		}
		_ = c.Close()
		_ = rdb.Close()
	}
}

// exclusion runs candidates on one election for d, killing, stalling and
// resigning leaders, with an observer, and checks exclusion, terms and
// what the observer saw.
func exclusion(t *testing.T, d time.Duration, newRD func(t *testing.T) (redis.UniversalClient, *redistest.Proxy), obsRD redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	name := redistest.Key(t)
	ref := &referee{}
	octx, ocancel := context.WithCancel(context.Background())
	defer ocancel()
	oc := clienttest.New(t, obsRD)
	obs := election.New(oc, name).Observe(octx)
	var seen []election.Leader
	obsDone := make(chan struct{})
	go func() {
		defer close(obsDone)
		for l := range obs {
			seen = append(seen, l)
		}
	}()
	var wg sync.WaitGroup
	var counts [3]int
	var mu sync.Mutex
	for i := range 4 {
		cd := &candidate{t: t, id: i, lease: time.Second, newRD: func() (redis.UniversalClient, *redistest.Proxy) { return newRD(t) }}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cd.run(ctx, name, ref, &counts, &mu)
		}()
	}
	wg.Wait()
	time.Sleep(2 * time.Second) // let the observer catch up
	ocancel()
	<-obsDone
	ref.mu.Lock()
	defer ref.mu.Unlock()
	t.Logf("%d terms: %d resigned, %d killed, %d stalled", len(ref.won), counts[0], counts[1], counts[2])
	assert.Empty(t, ref.bad)
	assert.Greater(t, len(ref.won), 10)
	// Every leader once, in term order.
	var got []election.Leader
	for _, l := range seen {
		got = append(got, election.Leader{Value: l.Value, Term: l.Term})
	}
	assert.Equal(t, ref.won, got)
}

// Exclusion in real time over many terms on a single server: candidates
// resign, are killed and are stalled; never two live leaderships, terms
// strictly increase, the observer sees every leader once in order.
func TestExclusion(t *testing.T) {
	s := redistest.Shared(t)
	exclusion(t, 15*time.Second, func(t *testing.T) (redis.UniversalClient, *redistest.Proxy) {
		p := redistest.NewProxy(t, s.Addr())
		return redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1}), p
	}, s.Client(t))
}

// Regression (B1): with redisync.WithKeyPrefix, Name returns the name
// given, as every other handle's does; the keys carry the prefix.
func TestNameWithKeyPrefix(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	const prefix = "app1:"
	e := election.New(clienttest.New(t, s.Client(t), redisync.WithKeyPrefix(prefix)), name)
	assert.Equal(t, name, e.Name())
	l, err := e.Campaign(ctx, "x")
	require.NoError(t, err)
	n, err := s.Client(t).Exists(ctx, prefix+name, "{"+prefix+name+"}:leader").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "the lock and the record are under the prefixed name")
	require.NoError(t, l.Resign(ctx))
}
