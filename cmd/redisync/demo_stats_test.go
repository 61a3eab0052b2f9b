package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestDemoStats runs the demo with -stats: the processes' counters come
// before the summary, and show what the demo did (acquisitions, the
// crashed holder's lost hold, the watchdog's renewals).
func TestDemoStats(t *testing.T) {
	t.Parallel()
	res := checkDemo(t, "-stats")
	out := res.stdout
	i, j := strings.Index(out, "== Client.Stats, summed over the processes"), strings.Index(out, "== summary")
	if i < 0 || j < i {
		t.Fatalf("no stats section before the summary")
	}
	stats := out[i:j]
	for _, re := range []string{
		`clients +[1-9]\d*\n`,
		// The rate limiter step's TryAcquire may give up (timed out) when
		// its window cannot free a permit in time.
		`acquisitions +[1-9]\d* acquired, \d+ busy, \d+ timed out, 0 cancelled, 0 errors\n`,
		`holds +[1-9]\d* lost; 0 held now\n`,
		`renewals +[1-9]\d*, 0 failed\n`,
		`pub/sub +0 reconnects; 0 channels subscribed now\n`,
		`waiting +0 now\n`,
	} {
		if !regexp.MustCompile(re).MatchString(stats) {
			t.Errorf("the stats section does not match %q:\n%s", re, stats)
		}
	}
}
