package redistest

// Option configures a server started by Start.
type Option func(*config)

// config holds what Start needs to know; defaults are its zero value.
type config struct {
	// args are extra redis-server arguments appended after the harness
	// defaults, so they override them.
	args []string

	// cluster starts the server with cluster-enabled and its own cluster bus
	// port (used by StartCluster).
	cluster bool

	// sentinelOf, when set, starts a sentinel monitoring this master address
	// as "mymaster" instead of a data server (used by StartSentinel).
	sentinelOf string
}

// WithArgs appends extra redis-server command-line arguments, for example
// WithArgs("--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru").
// They come after the harness defaults (--port, --bind 127.0.0.1, --save "",
// --appendonly no, --protected-mode no, --dir, --daemonize no), so they
// override them; do not override --port or --bind. The default is no extra
// arguments.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}
