package chaos

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The bounded pass ("make test", plain "go test"): a few short seeds, all
// within 3 minutes. "make chaos" sets the environment for longer runs.
const (
	defaultSeeds    = 3
	defaultDuration = 20 * time.Second

	// defaultLateDelivery is whether the bounded pass injects late
	// deliveries (stalls longer than the request record TTL, up to
	// defaultLateMax). The scripts refuse a copy that arrives past its
	// deadline, so it is on; CHAOS_LATE_DELIVERY=0 turns it off for one
	// run.
	defaultLateDelivery = true
	defaultLateMax      = 10 * time.Second
)

var (
	seedFlag     = flag.Int64("seed", envInt("CHAOS_SEED", 1), "first seed (env CHAOS_SEED)")
	seedsFlag    = flag.Int("seeds", int(envInt("CHAOS_SEEDS", defaultSeeds)), "number of seeds, from -seed on (env CHAOS_SEEDS)")
	durationFlag = flag.Duration("duration", envDuration("CHAOS_DURATION", defaultDuration), "fault phase per seed (env CHAOS_DURATION)")
	lateFlag     = flag.Bool("late", envBool("CHAOS_LATE_DELIVERY", defaultLateDelivery), "add stalls longer than the request record TTL (env CHAOS_LATE_DELIVERY=1)")
	lateMaxFlag  = flag.Duration("latemax", envDuration("CHAOS_LATE_MAX", defaultLateMax), "longest late-delivery stall (env CHAOS_LATE_MAX)")
	strictFlag   = flag.Bool("strictpermits", envBool("CHAOS_STRICT_PERMITS", false), "counted permits lost to indeterminate calls are a violation (env CHAOS_STRICT_PERMITS=1)")
	outFlag      = flag.String("out", os.Getenv("CHAOS_OUT"), "directory for porcupine's HTML (env CHAOS_OUT; default $TMPDIR/redisync-chaos)")
	verboseFlag  = flag.Bool("chaoslog", envBool("CHAOS_LOG", false), "log every fault and phase as it happens (env CHAOS_LOG=1)")
)

// envInt, envDuration and envBool read the environment; a malformed value
// panics at start-up rather than silently running another configuration.
func envInt(name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic("chaos: " + name + "=" + v + ": " + err.Error())
	}
	return n
}

func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		panic("chaos: " + name + "=" + v + ": " + err.Error())
	}
	return d
}

func envBool(name string, def bool) bool {
	switch v := strings.ToLower(os.Getenv(name)); v {
	case "":
		return def
	case "0", "false", "no", "off":
		return false
	case "1", "true", "yes", "on":
		return true
	default:
		panic("chaos: " + name + "=" + v + ": want 1 or 0")
	}
}

// TestChaos runs the fault suite for each seed and fails with the seed, the
// violations, an excerpt of the history around each and the path of
// porcupine's HTML.
func TestChaos(t *testing.T) {
	if *seedsFlag < 1 || *durationFlag <= 0 {
		t.Fatalf("chaos: -seeds %d and -duration %v must be positive", *seedsFlag, *durationFlag)
	}
	for i := range *seedsFlag {
		seed := *seedFlag + int64(i)
		t.Run("seed="+strconv.FormatInt(seed, 10), func(t *testing.T) {
			cfg := Config{
				Seed:          seed,
				Duration:      *durationFlag,
				LateDelivery:  *lateFlag,
				LateMax:       *lateMaxFlag,
				StrictPermits: *strictFlag,
				OutDir:        *outFlag,
			}
			if *verboseFlag {
				cfg.Logf = t.Logf
			}
			rep := Run(t, cfg)
			t.Log("\n" + rep.Summary())
			if len(rep.Violations) > 0 {
				var b strings.Builder
				for _, v := range rep.Violations {
					b.WriteString("\n" + v.String())
				}
				t.Errorf("chaos seed %d (rerun: make chaos SEED=%d SEEDS=1 DURATION=%v LATE_DELIVERY=%v): %d violations:%s\nfaults:\n%s",
					seed, seed, *durationFlag, b2i(*lateFlag), len(rep.Violations), b.String(), faultList(rep.Faults))
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func faultList(fs []Fault) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}
