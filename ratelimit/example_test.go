package ratelimit_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

// TestMain runs every test of the package (those of package ratelimit
// too) against servers of the harness, and the examples against its shared
// server.
func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

func ExampleLimiter() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	// At most 3 calls per hour to a partner API, across every process
	// (and every Java service using Redisson's RRateLimiter on this name).
	partner := ratelimit.New(client, "example:partner-api")
	defer partner.Delete(ctx)
	if _, err := partner.TrySetRate(ctx, ratelimit.Overall, 3, time.Hour); err != nil {
		fmt.Println(err)
		return
	}
	for i := range 4 {
		ok, err := partner.TryAcquire(ctx, 1, 0)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("call", i+1, "allowed:", ok)
	}
	// Output:
	// call 1 allowed: true
	// call 2 allowed: true
	// call 3 allowed: true
	// call 4 allowed: false
}

func ExampleLimiter_TryAcquire() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	l := ratelimit.New(client, "example:reports")
	defer l.Delete(ctx)
	_ = l.SetRate(ctx, ratelimit.PerClient, 1, time.Hour)
	_, _ = l.TryAcquire(ctx, 1, 0)

	// The next permit is an hour away: a 10-second wait returns false at
	// once instead of sleeping 10 seconds.
	start := time.Now()
	ok, err := l.TryAcquire(ctx, 1, 10*time.Second)
	fmt.Println(ok, err, time.Since(start) < 5*time.Second)
	// Output: false <nil> true
}

func ExampleGCRA() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	// 10 requests per minute per user, up to 3 at once.
	user := ratelimit.NewGCRA(client, "example:user:42", ratelimit.Limit{Rate: 10, Period: time.Minute, Burst: 3})
	defer user.Reset(ctx)
	for range 4 {
		r, err := user.AllowN(ctx, 1)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("allowed %d, remaining %d, retry after ~%ds\n", r.Allowed, r.Remaining, r.RetryAfter.Round(time.Second)/time.Second)
	}
	// Output:
	// allowed 1, remaining 2, retry after ~0s
	// allowed 1, remaining 1, retry after ~0s
	// allowed 1, remaining 0, retry after ~0s
	// allowed 0, remaining 0, retry after ~6s
}

func ExampleGCRA_Reserve() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	g := ratelimit.NewGCRA(client, "example:emails", ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 1})
	defer g.Reset(ctx)
	r, _ := g.Reserve(ctx, 1) // now
	fmt.Println(r.OK(), r.Delay() == 0)
	later, _ := g.Reserve(ctx, 1) // in an hour
	fmt.Println(later.OK(), later.Delay() > 59*time.Minute)
	_ = later.Cancel(ctx) // the mail will not be sent: give the slot back
	again, _ := g.Reserve(ctx, 1)
	fmt.Println(again.Delay() < 61*time.Minute)
	// Output:
	// true true
	// true true
	// true
}

// An HTTP middleware: one GCRA budget per client address, its Result in
// the RateLimit-* and Retry-After headers. The limiter's call is bounded
// by its own timeout, so that a Redis outage costs each request at most
// that (give the go-redis client ContextTimeoutEnabled, so that a stalled
// read is cut too), not go-redis's dial timeouts and retries.
func ExampleGCRA_AllowN_http() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	per := ratelimit.Limit{Rate: 2, Period: time.Minute, Burst: 2}
	limit := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip, _, _ := net.SplitHostPort(r.RemoteAddr)
			ctx, cancel := context.WithTimeout(r.Context(), 500*time.Millisecond)
			res, err := ratelimit.NewGCRA(client, "example:ip:"+ip, per).AllowN(ctx, 1)
			cancel()
			if err != nil {
				http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
				return
			}
			h := w.Header()
			// The burst: what RateLimit-Remaining counts down from (events
			// allowed at once), whatever the sustained rate.
			h.Set("RateLimit-Limit", strconv.FormatInt(per.Burst, 10))
			h.Set("RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
			h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(res.ResetAfter.Seconds()))))
			if res.Allowed == 0 {
				// Whole seconds (HTTP has no finer Retry-After), rounded
				// up: a retry sooner would be refused again.
				h.Set("Retry-After", strconv.Itoa(int(math.Ceil(res.RetryAfter.Seconds()))))
				http.Error(w, "too many requests", http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer ratelimit.NewGCRA(client, "example:ip:192.0.2.1", per).Reset(ctx)

	for range 3 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil) // RemoteAddr 192.0.2.1:1234
		handler.ServeHTTP(rec, req)
		fmt.Printf("%d RateLimit-Remaining=%s Retry-After=%q\n", rec.Code, rec.Header().Get("RateLimit-Remaining"), rec.Header().Get("Retry-After"))
	}
	// Output:
	// 200 RateLimit-Remaining=1 Retry-After=""
	// 200 RateLimit-Remaining=0 Retry-After=""
	// 429 RateLimit-Remaining=0 Retry-After="30"
}

func ExampleGCRA_Inspect() {
	ctx := context.Background()
	client := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer client.Close()

	g := ratelimit.NewGCRA(client, "example:gcra-inspect", ratelimit.Limit{Rate: 10, Period: time.Minute, Burst: 3})
	defer g.Reset(ctx)
	_, _ = g.AllowN(ctx, 2)
	info, err := g.Inspect(ctx) // takes nothing
	fmt.Println("remaining:", info.Remaining, err)
	// Output:
	// remaining: 1 <nil>
}
