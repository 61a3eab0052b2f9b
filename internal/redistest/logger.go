package redistest

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/redis/go-redis/v9"
)

// quietLogger is the go-redis logger during tests: it prints each distinct
// message once and counts its repeats. Tests that stop servers make every
// pool that still knows the server log a "failed to dial" line per attempt,
// hundreds of identical lines that would bury a failing test's output in
// CI logs. Main prints the number of repeats at the end.
type quietLogger struct {
	mu      sync.Mutex
	seen    map[string]bool
	repeats int
	out     *log.Logger
}

func newQuietLogger() *quietLogger {
	return &quietLogger{seen: make(map[string]bool), out: log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)}
}

// Printf implements go-redis's logging interface.
func (l *quietLogger) Printf(_ context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[msg] {
		l.repeats++
		return
	}
	l.seen[msg] = true
	_ = l.out.Output(2, msg)
}

// summary reports how many repeated lines were left out, if any.
func (l *quietLogger) summary() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.repeats > 0 {
		fmt.Fprintf(os.Stderr, "redistest: %d repeated go-redis log lines left out (each distinct line was printed once)\n", l.repeats)
	}
}

// installQuietLogger makes go-redis log through a quietLogger and returns it.
func installQuietLogger() *quietLogger {
	l := newQuietLogger()
	redis.SetLogger(l)
	return l
}
