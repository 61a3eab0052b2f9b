package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// warnLog collects the library's warnings (an undo or a settle that never
// reached Redis, ...) with the history's time, for the report: they say
// what the library itself knew it could not clean up.
type warnLog struct {
	r      *run
	client int
	attrs  []slog.Attr

	mu    *sync.Mutex
	lines *[]string
}

func (w *warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warnLog) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%9.3fs client %d: %s", sec(w.r.h.Now()), w.client, rec.Message)
	for _, a := range w.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	w.mu.Lock()
	*w.lines = append(*w.lines, b.String())
	w.mu.Unlock()
	return nil
}

func (w *warnLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *w
	c.attrs = append(append([]slog.Attr(nil), w.attrs...), attrs...)
	return &c
}

func (w *warnLog) WithGroup(string) slog.Handler { return w }

// logger returns client c's logger: its warnings go to r.warnings.
func (r *run) logger(c int) *slog.Logger {
	return slog.New(&warnLog{r: r, client: c, mu: &r.warnMu, lines: &r.warnings})
}
