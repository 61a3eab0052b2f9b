package ratelimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

// redisson352 is the test's own reproduction of Redisson 3.52's tryAcquire
// script: the Java client beside the Go one.
//
//go:embed testdata/redisson_352_try_acquire.lua
var redisson352Src string

var redisson352 = redis.NewScript(redisson352Src)

// javaAcquire runs redisson352 as the Redisson instance with the given
// client id, at the server's clock; nil means granted, else the delay.
func javaAcquire(t *testing.T, rdb redis.UniversalClient, name, clientID string, n int64) (any, error) {
	t.Helper()
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	random := make([]byte, 16)
	for i := range random {
		random[i] = byte(i*7 + 1)
	}
	random[0] = byte(now.UnixNano())
	random[1] = byte(now.UnixNano() >> 8)
	v, err := redisson352.Run(ctx, rdb, []string{name, keys.RateValue(name), keys.RateClientValue(name, clientID),
		keys.RatePermits(name), keys.RateClientPermits(name, clientID)}, n, now.UnixMilli(), random).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// javaTry runs redisson352 once as the Overall limiter's Redisson
// instance, on a clock without skew (the server's, read in the script):
// whether it granted 1 permit, the grant's score, and otherwise the delay
// it returned.
func javaTry(ctx context.Context, rdb redis.UniversalClient, name string, random []byte) (ok bool, at int64, delay time.Duration, err error) {
	d, err := redisson352.Run(ctx, rdb, []string{name, keys.RateValue(name), keys.RateClientValue(name, "java"),
		keys.RatePermits(name), keys.RateClientPermits(name, "java")}, 1, "", random).Int64()
	if errors.Is(err, redis.Nil) {
		score, err := rdb.ZScore(ctx, keys.RatePermits(name), "\x10"+string(random)+"\x01\x00\x00\x00").Result()
		return true, int64(score), 0, err
	}
	return false, 0, time.Duration(d) * time.Millisecond, err
}

// liveGrants returns the permits the grants in the Overall log hold.
func liveGrants(t *testing.T, rdb redis.UniversalClient, name string) int64 {
	t.Helper()
	var live int64
	for _, m := range rdb.ZRange(context.Background(), keys.RatePermits(name), 0, -1).Val() {
		require.Len(t, m, 21)
		live += int64(m[17]) | int64(m[18])<<8 | int64(m[19])<<16 | int64(m[20])<<24
	}
	return live
}

// countedClient returns a redisync client on the shared server and the
// counter of the commands it sends.
func countedClient(t *testing.T) (*redisync.Client, *redistest.Counter) {
	t.Helper()
	cc := new(redistest.Counter)
	rdb := redistest.Shared(t).Client(t)
	rdb.AddHook(cc)
	return clienttest.New(t, rdb), cc
}

func rdbOf(c *redisync.Client) redis.UniversalClient { return (*core.Client)(c).Redis() }

// Bad input is ErrInvalidArgument (n > maxRate: ErrExceedsRate), and
// nothing is sent.
func TestInvalidArgumentsNothingSent(t *testing.T) {
	c, cc := countedClient(t)
	ctx := context.Background()
	l := New(c, redistest.Key(t, "rl"))
	invalid := map[string]error{}
	_, invalid["rate 0"] = l.TrySetRate(ctx, Overall, 0, time.Second)
	_, invalid["rate -1"] = l.TrySetRate(ctx, Overall, -1, time.Second)
	invalid["rate 2^32"] = l.SetRate(ctx, Overall, 1<<32, time.Second)
	_, invalid["interval 0"] = l.UpdateRate(ctx, Overall, 1, 0)
	_, invalid["interval 999µs"] = l.TrySetRate(ctx, Overall, 1, 999*time.Microsecond)
	_, invalid["type 2"] = l.TrySetRate(ctx, RateType(2), 1, time.Second)
	_, invalid["keep-alive < interval"] = l.TrySetRate(ctx, Overall, 1, time.Second, WithKeepAlive(time.Second-1))
	_, invalid["negative keep-alive"] = l.TrySetRate(ctx, Overall, 1, time.Second, WithKeepAlive(-1))
	_, invalid["n 0"] = l.TryAcquire(ctx, 0, 0)
	invalid["n -1"] = l.Acquire(ctx, -1)
	invalid["release 0"] = l.Release(ctx, 0)
	_, invalid["negative wait"] = l.TryAcquire(ctx, 1, -1)
	_, invalid["empty name"] = New(c, "").AvailablePermits(ctx)
	g := func(lim Limit) *GCRA { return NewGCRA(c, redistest.Key(t, "g"), lim) }
	_, invalid["gcra rate 0"] = g(Limit{Rate: 0, Period: time.Second, Burst: 1}).Allow(ctx)
	_, invalid["gcra period 0"] = g(Limit{Rate: 1, Period: 999 * time.Microsecond, Burst: 1}).Allow(ctx)
	_, invalid["gcra burst 0"] = g(Limit{Rate: 1, Period: time.Second, Burst: 0}).Allow(ctx)
	_, invalid["gcra burst too long"] = g(Limit{Rate: 1, Period: 24 * time.Hour, Burst: 1 << 30}).Allow(ctx)
	_, invalid["gcra n 0"] = g(Limit{Rate: 1, Period: time.Second, Burst: 1}).AllowN(ctx, 0)
	invalid["gcra wait n 0"] = g(Limit{Rate: 1, Period: time.Second, Burst: 1}).WaitN(ctx, 0)
	_, invalid["gcra reserve n -1"] = g(Limit{Rate: 1, Period: time.Second, Burst: 1}).Reserve(ctx, -1)
	for what, err := range invalid {
		assert.ErrorIs(t, err, redisync.ErrInvalidArgument, what)
	}
	_, err := l.TryAcquire(ctx, 1<<33, 0)
	assert.ErrorIs(t, err, ErrExceedsRate)
	require.Zero(t, cc.Load(), "commands sent")
}

func TestConfigAndErrors(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	l := New(c, redistest.Key(t, "rl"))
	_, err := l.Config(ctx)
	require.ErrorIs(t, err, ErrNotInitialized)
	_, err = l.TryAcquire(ctx, 1, 0)
	require.ErrorIs(t, err, ErrNotInitialized)
	_, err = l.AvailablePermits(ctx)
	require.ErrorIs(t, err, ErrNotInitialized)
	require.ErrorIs(t, l.Release(ctx, 1), ErrNotInitialized)
	ok, err := l.UpdateRate(ctx, Overall, 3, time.Second)
	require.NoError(t, err)
	require.False(t, ok, "update of an unset limiter")

	ok, err = l.TrySetRate(ctx, PerClient, 3, 1500*time.Millisecond, WithKeepAlive(time.Hour))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = l.TrySetRate(ctx, Overall, 9, time.Second)
	require.NoError(t, err)
	require.False(t, ok, "second TrySetRate")
	cfg, err := l.Config(ctx)
	require.NoError(t, err)
	assert.Equal(t, Config{Type: PerClient, Rate: 3, Interval: 1500 * time.Millisecond, KeepAlive: time.Hour}, cfg)
	ttl := rdbOf(c).PTTL(ctx, l.Name()).Val()
	assert.Greater(t, ttl, 59*time.Minute, "keep-alive on the hash")

	_, err = l.TryAcquire(ctx, 4, 0)
	require.ErrorIs(t, err, ErrExceedsRate)
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	cfg, err = l.Config(ctx)
	require.NoError(t, err)
	assert.Equal(t, Config{Type: Overall, Rate: 5, Interval: time.Hour}, cfg)
	assert.Equal(t, time.Duration(-1), rdbOf(c).PTTL(ctx, l.Name()).Val(), "SetRate without keep-alive: no expiry")

	ok, err = l.Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = l.Delete(ctx)
	require.NoError(t, err)
	require.False(t, ok)
}

// TrySetRate writes Redisson's four fields, and the keys and members of a
// grant are Redisson's, byte for byte: Redisson 3.52's script (our test
// reproduction) and ours take from one budget and read each other's
// grants.
func TestRedissonWireCompatible(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	_, err := l.TrySetRate(ctx, Overall, 5, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"rate": "5", "interval": "3600000", "type": "0", "keepAliveTime": "0"},
		rdb.HGetAll(ctx, name).Val())

	v, err := javaAcquire(t, rdb, name, "java-1", 2) // Java first: it creates the value key
	require.NoError(t, err)
	require.Nil(t, v, "Java granted")
	n, err := l.AvailablePermits(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "Go reads Java's grant")
	ok, err := l.TryAcquire(ctx, 3, 0)
	require.NoError(t, err)
	require.True(t, ok)
	v, err = javaAcquire(t, rdb, name, "java-1", 1)
	require.NoError(t, err)
	require.NotNil(t, v, "Java sees Go's grant: it must wait")
	assert.Equal(t, "0", rdb.Get(ctx, keys.RateValue(name)).Val())

	// Both members decode with Redisson's struct.unpack('Bc0I').
	members := rdb.ZRange(ctx, keys.RatePermits(name), 0, -1).Val()
	require.Len(t, members, 2)
	var permits []int64
	for _, m := range members {
		require.Len(t, m, 21)
		require.Equal(t, byte(16), m[0])
		r, err := rdb.Eval(ctx, "local id, p = struct.unpack('Bc0I', ARGV[1]); return {#id, p}", nil, m).Int64Slice()
		require.NoError(t, err)
		assert.Equal(t, int64(16), r[0], "id length")
		permits = append(permits, r[1])
	}
	slices.Sort(permits)
	assert.Equal(t, []int64{2, 3}, permits)
	// Our hand packing is struct.pack's.
	packed, err := rdb.Eval(ctx, "return struct.pack('Bc0I', 16, ARGV[1], 70000)", nil, "0123456789abcdef").Text()
	require.NoError(t, err)
	ours := "\x10" + "0123456789abcdef" + "\x70\x11\x01\x00"
	assert.Equal(t, packed, ours)
}

// PerClient: a Redisson instance and a redisync Client with the same id
// share one budget under {name}:value:<id> and {name}:permits:<id>; other
// clients have their own.
func TestRedissonPerClientKeys(t *testing.T) {
	c := clienttest.Shared(t, redisync.WithID("shared-id"))
	other := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	_, err := New(c, name).TrySetRate(ctx, PerClient, 2, time.Hour)
	require.NoError(t, err)
	v, err := javaAcquire(t, rdb, name, "shared-id", 1)
	require.NoError(t, err)
	require.Nil(t, v)
	ok, err := New(c, name).TryAcquire(ctx, 2, 0)
	require.NoError(t, err)
	require.False(t, ok, "Java took one of this client's two")
	ok, err = New(c, name).TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = New(other, name).TryAcquire(ctx, 2, 0)
	require.NoError(t, err)
	require.True(t, ok, "another client's budget")
	assert.Equal(t, int64(2), rdb.ZCard(ctx, keys.RateClientPermits(name, "shared-id")).Val())
	assert.Equal(t, "0", rdb.Get(ctx, keys.RateClientValue(name, "shared-id")).Val())
	assert.Equal(t, int64(0), rdb.Exists(ctx, keys.RateValue(name), keys.RatePermits(name)).Val())

	// Delete removes every redisync client's keys (and this one's, that
	// Java shares).
	ok, err = New(other, name).Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	left, err := rdb.Keys(ctx, "*"+name+"*").Result()
	require.NoError(t, err)
	left = slices.DeleteFunc(left, func(k string) bool { return strings.HasPrefix(k, "redisync_request:") })
	assert.Empty(t, left, "keys left")
}

// grantLog collects the grants of limiters (server time in ms and permits)
// per budget.
type grantLog struct {
	mu sync.Mutex
	m  map[string][][2]int64
}

func (g *grantLog) hook(budget string) func(at, n int64) {
	return func(at, n int64) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.m[budget] = append(g.m[budget], [2]int64{at, n})
	}
}

// most returns the most permits granted within any window of window ms:
// grants at s and s+window-1 count together, grants at s and s+window do
// not. A grant of Redisson's counts for the interval (window = interval:
// it is given back at s+interval); one of redisync's for a ms more
// (window = interval+1).
func most(grants [][2]int64, window int64) int64 {
	slices.SortFunc(grants, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	var best int64
	for i := range grants {
		var sum int64
		for j := i; j < len(grants) && grants[j][0] < grants[i][0]+window; j++ {
			sum += grants[j][1]
		}
		best = max(best, sum)
	}
	return best
}

// Four processes (Clients on their own connections) take permits of an
// Overall and a PerClient limiter as fast as they can, with waits, and a
// Java client (Redisson 3.52's script) takes from the Overall one: no
// window of the interval ever holds more than the rate, per budget.
func TestNeverAboveRateAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	overall, perClient := redistest.Key(t, "overall"), redistest.Key(t, "per-client")
	const rate, interval = 7, 150
	setup := New(clienttest.Shared(t), overall)
	require.NoError(t, setup.SetRate(ctx, Overall, rate, interval*time.Millisecond))
	require.NoError(t, New(clienttest.Shared(t), perClient).SetRate(ctx, PerClient, rate, interval*time.Millisecond))
	log := &grantLog{m: map[string][][2]int64{}}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for p := range 4 {
		c := clienttest.Shared(t)
		lo, lp := New(c, overall), New(c, perClient)
		lo.granted, lp.granted = log.hook("overall"), log.hook("client "+strconv.Itoa(p))
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 12 {
					l := lo
					if (i+g)%2 == 1 {
						l = lp
					}
					n := int64(1 + (i+g+p)%3)
					var err error
					if i%4 == 0 {
						ctx, cancel := context.WithTimeout(ctx, time.Second)
						err = l.Acquire(ctx, n)
						cancel()
						if errors.Is(err, context.DeadlineExceeded) {
							err = nil
						}
					} else {
						_, err = l.TryAcquire(ctx, n, time.Duration(i*20)*time.Millisecond)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	// A Java client (Redisson 3.52's script) takes from the Overall
	// budget at the same time.
	// It re-runs the script after the delay it returns, as Redisson does,
	// until the Go processes are done and it got a few permits.
	var javaGrants atomic.Int64
	goDone := make(chan struct{})
	var java sync.WaitGroup
	java.Add(1)
	go func() {
		defer java.Done()
		rdb := redistest.Shared(t).Client(t)
		javaGrant := log.hook("overall")
		giveUp := time.Now().Add(10 * time.Second)
		for i := 0; time.Now().Before(giveUp); i++ {
			select {
			case <-goDone:
				if javaGrants.Load() >= 3 {
					return
				}
			default:
			}
			random := []byte(fmt.Sprintf("java-%011d", i))
			ok, at, delay, err := javaTry(ctx, rdb, overall, random)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				javaGrant(at, 1)
				javaGrants.Add(1)
				continue
			}
			time.Sleep(min(delay, 50*time.Millisecond))
		}
	}()
	wg.Wait()
	close(goDone)
	java.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NotEmpty(t, log.m["overall"])
	require.GreaterOrEqual(t, javaGrants.Load(), int64(3), "the Java client got permits too")
	for budget, grants := range log.m {
		// The Java client's grants follow Redisson's rule: the Overall
		// budget holds at most rate in any interval that leaves its end
		// out. The PerClient budgets, Go's alone, hold at most rate in
		// any interval with both ends.
		window := int64(interval + 1)
		if budget == "overall" {
			window = interval
		}
		assert.LessOrEqual(t, most(grants, window), int64(rate), budget)
	}
	assert.Len(t, log.m, 5, "overall and 4 per-client budgets")
}

// Redisson #7329: availablePermits above the rate after a release. Here a
// release takes its grants out of the log, and a value above the rate (as
// Redisson's scripts leave) is set back to what the live grants allow.
func TestAvailableNeverAboveRate_Redisson7329(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	ok, err := l.TryAcquire(ctx, 5, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, l.Release(ctx, 2))
	n, err := l.AvailablePermits(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	assert.Equal(t, int64(3), liveGrants(t, rdb, name), "the release took its permits out of the log")

	// Once the grants expire: the rate, not 2 + 5.
	releaseThroughExpiry(ctx, t, l)

	// A value above the rate written by someone else, with 3 live grants.
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	ok, err = l.TryAcquire(ctx, 3, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, rdb.Set(ctx, keys.RateValue(name), "9", 0).Err())
	n, err = l.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	assert.Equal(t, "2", rdb.Get(ctx, keys.RateValue(name)).Val(), "written back")
}

// Redisson #7342: a release then a recount throws released permits away
// (or counts them twice). Here the value plus the live grants stay the
// rate through releases, acquisitions and expiry.
func TestReleaseCountedOnce_Redisson7342(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	sum := func() int64 {
		v, _ := rdb.Get(ctx, keys.RateValue(name)).Int64()
		return v + liveGrants(t, rdb, name)
	}
	take := func(n int64, want bool) {
		t.Helper()
		ok, err := l.TryAcquire(ctx, n, 0)
		require.NoError(t, err)
		require.Equal(t, want, ok, "acquire %d", n)
		require.Equal(t, int64(5), sum(), "value + live grants")
	}
	take(3, true)
	require.NoError(t, l.Release(ctx, 1))
	require.Equal(t, int64(5), sum())
	take(3, true) // 2 left + 1 released
	take(1, false)
	require.NoError(t, l.Release(ctx, 4)) // splits the first grant
	require.Equal(t, int64(5), sum())
	take(4, true)

	// Through expiry: released permits come back once, none is lost.
	releaseThroughExpiry(ctx, t, l)
	ok, err := l.TryAcquire(ctx, 5, 0)
	require.NoError(t, err)
	require.True(t, ok, "the whole rate after expiry")
}

// Redisson 3.52 fails on a nil score when the log is empty and the value
// is below the request; here the budget is recounted from the empty log.
func TestEmptyLogLowValue_RedissonNilScore(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	require.NoError(t, rdb.Set(ctx, keys.RateValue(name), "0", 0).Err())
	_, err := javaAcquire(t, rdb, name, "java", 1)
	require.Error(t, err, "Redisson 3.52's script fails in this state")
	ok, err := l.TryAcquire(ctx, 2, 0)
	require.NoError(t, err)
	require.True(t, ok)
	n, err := l.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
}

// Redisson 3.52 resets the budget to the rate when the value key is lost
// while grants live, and over-admits for an interval; here it is recounted
// from the live grants.
func TestLostValueKey_RedissonOverAdmission(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	ok, err := l.TryAcquire(ctx, 4, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, rdb.Del(ctx, keys.RateValue(name)).Err())
	ok, err = l.TryAcquire(ctx, 2, 0)
	require.NoError(t, err)
	require.False(t, ok, "only 1 left")
	ok, err = l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
}

// A re-sent acquisition returns the first one's grant, a late one is
// refused, and an undo removes the grant and cancels later copies.
func TestAcquireExactlyOnce(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	random := "0123456789abcdef"
	req := l.requestKey()
	run := func(req string, deadline int64) (lua.RateAcquireReply, error) {
		k := l.stateKeys()
		return lua.RateAcquireArgs{Limiter: k.limiter, Value: k.value, Permits: k.permits,
			ClientValue: k.clientValue, ClientPermits: k.clientPermits, Clients: k.clients,
			Request: req, N: 2, Deadline: deadline, Random: random,
			ClientID: (*core.Client)(c).ID()}.Run(ctx, lua.Direct{Client: rdb})
	}
	deadline := (*core.Client)(c).Requests().Deadline(ctx)
	first, err := run(req, deadline)
	require.NoError(t, err)
	require.EqualValues(t, lua.RateAcquireGranted, first.Code)
	again, err := run(req, deadline)
	require.NoError(t, err)
	assert.Equal(t, first, again, "re-sent: the first grant's reply")
	assert.Equal(t, int64(1), rdb.ZCard(ctx, keys.RatePermits(name)).Val())
	assert.Equal(t, "3", rdb.Get(ctx, keys.RateValue(name)).Val())

	_, err = run(l.requestKey(), time.Now().Add(-time.Minute).UnixMilli())
	require.ErrorContains(t, err, "REDISYNC_LATE")
	assert.Equal(t, "3", rdb.Get(ctx, keys.RateValue(name)).Val(), "late: nothing granted")

	l.undo(2, req, deadline, random)
	assert.Equal(t, int64(0), rdb.ZCard(ctx, keys.RatePermits(name)).Val(), "undo removed the grant")
	assert.Equal(t, "5", rdb.Get(ctx, keys.RateValue(name)).Val())
	r, err := run(req, deadline)
	require.NoError(t, err)
	assert.EqualValues(t, lua.RateAcquireCancelled, r.Code, "a copy after the undo is cancelled")

	// An undo that comes first cancels the acquisition.
	req2 := l.requestKey()
	l.undo(1, req2, deadline, random)
	r, err = run(req2, deadline)
	require.NoError(t, err)
	assert.EqualValues(t, lua.RateAcquireCancelled, r.Code)
	assert.Equal(t, "5", rdb.Get(ctx, keys.RateValue(name)).Val())
}

// A wait that cannot succeed within its bound, by the delay Redis gives,
// returns at once: TryAcquire with false, Acquire with the context's
// deadline error; so do the waiters lined up behind the head.
func TestHopelessWaitReturnsAtOnce(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 1, time.Hour))
	ok, err := l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)

	start := time.Now()
	ok, err = l.TryAcquire(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.False(t, ok)
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = l.Acquire(dctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, dctx.Err(), "returned before the deadline")
	require.Less(t, time.Since(start), 30*time.Second, "did not sleep the minute out")

	// A head that waits without a bound, and callers behind it.
	hctx, stop := context.WithCancel(ctx)
	head := make(chan error, 1)
	go func() { head <- l.Acquire(hctx, 1) }()
	require.Eventually(t, func() bool { return lineLen((*core.Client)(c), name) == 1 }, 5*time.Second, time.Millisecond)
	// Wait until the head has its delay (it then sleeps on it).
	require.Eventually(t, func() bool {
		lines.mu.Lock()
		defer lines.mu.Unlock()
		l := lines.m[lineKey{(*core.Client)(c), name}]
		return l != nil && !l.next.IsZero()
	}, 5*time.Second, time.Millisecond)
	ok, err = l.TryAcquire(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "behind the head, hopeless")
	ok, err = l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.False(t, ok, "a single attempt does not overtake the line")
	stop()
	require.ErrorIs(t, <-head, context.Canceled)
	require.Zero(t, lineLen((*core.Client)(c), name))
}

// Waiters of one Client are served in arrival order.
func TestWaitersServedInOrder(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 2, 200*time.Millisecond))
	ok, err := l.TryAcquire(ctx, 2, 0)
	require.NoError(t, err)
	require.True(t, ok)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, l.Acquire(ctx, 1))
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}()
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return lineLen((*core.Client)(c), name)+len(order) == i+1
		}, 5*time.Second, time.Millisecond)
	}
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, order)
}

// UpdateRate keeps the grants in use (Redisson 4.4's keepState).
func TestUpdateRateKeepsState(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	l := New(c, redistest.Key(t, "rl"))
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	ok, err := l.TryAcquire(ctx, 3, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = l.UpdateRate(ctx, Overall, 10, time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	n, err := l.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(7), n)
	ok, err = l.UpdateRate(ctx, Overall, 2, time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	n, err = l.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "more in use than the new rate")
	require.NoError(t, l.SetRate(ctx, Overall, 2, time.Hour))
	n, err = l.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "SetRate resets")
}

// A Release of the same Client wakes its sleeping head at once; it does
// not sleep out the delay Redis gave it.
func TestReleaseWakesLocalWaiter(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 1, time.Hour))
	ok, err := l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	done := make(chan error, 1)
	go func() { done <- l.Acquire(ctx, 1) }()
	require.Eventually(t, func() bool {
		lines.mu.Lock()
		defer lines.mu.Unlock()
		l := lines.m[lineKey{(*core.Client)(c), name}]
		return l != nil && !l.next.IsZero()
	}, 5*time.Second, time.Millisecond, "the head sleeps its hour")
	require.NoError(t, l.Release(ctx, 1))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter slept on after the release")
	}
}

// releaseThroughExpiry sets l to 5 permits per 100 ms, takes them all,
// releases 2 and waits until the grants expire: the limiter must come back
// to exactly its rate, never above it on the way.
func releaseThroughExpiry(ctx context.Context, t *testing.T, l *Limiter) {
	t.Helper()
	require.NoError(t, l.SetRate(ctx, Overall, 5, 100*time.Millisecond))
	ok, err := l.TryAcquire(ctx, 5, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, l.Release(ctx, 2))
	var above atomic.Bool
	redistest.Eventually(t, 5*time.Second, "the rate available", func() error {
		n, err := l.AvailablePermits(ctx)
		if err != nil {
			return err
		}
		above.Store(above.Load() || n > 5)
		if n != 5 {
			return errors.New("available " + strconv.FormatInt(n, 10))
		}
		return nil
	})
	require.False(t, above.Load(), "available above the rate")
}
