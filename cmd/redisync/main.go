package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Exit statuses, as Go tools use them.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line was wrong
)

func main() {
	// go-redis logs to stderr on its own, for instance one "pool.go: ...
	// failed to dial after 5 attempts" line per connection attempt on an
	// unreachable server, before the command's message about the same
	// failure. The command reports every error itself, clearly and once,
	// so go-redis's log is discarded. This is process-wide, so it is done
	// here and not in run, which tests call.
	redis.SetLogger(discardLogger{})
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// discardLogger is a go-redis logger that prints nothing.
type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// env is the process environment as the commands see it; tests replace it.
var env = os.Getenv

// run runs the command line args (without the program name) and returns the
// exit status. It never calls os.Exit, so tests call it directly. An
// interrupt (Ctrl-C) cancels the running command, which then cleans up.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "demo":
		err = runDemo(ctx, rest, stdout, stderr)
	case "inspect":
		err = runInspect(ctx, rest, stdout, stderr)
	case "unlock":
		err = runUnlock(ctx, rest, stdin, stdout, stderr)
	case "delete":
		err = runDelete(ctx, rest, stdin, stdout, stderr)
	case "version":
		err = runVersion(rest, stdout)
	case "help", "-h", "-help", "--help":
		return runHelp(rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "redisync: unknown command %q\nRun 'redisync help' for usage.\n", cmd)
		return exitUsage
	}
	return report(err, cmd, stderr)
}

const mainUsage = `redisync runs redisync's demo and inspects or frees distributed locks,
read-write locks, semaphores, latches and elections stored in Redis in
Redisson's layout.

Usage:

	redisync <command> [flags] [arguments]

The commands are:

	demo      show the primitives at work between simulated processes
	inspect   show who holds a lock, semaphore or latch, who leads an election, and who waits
	unlock    force-release a lock, fair lock or read-write lock and wake its waiters
	delete    delete an election's keys (its leader record, log, queue and term counter)
	version   print the module version, source revision and Go version

The Redis server is the -redis flag's URL, or else the REDIS_URL
environment variable, in one of these forms:

	redis://[user:password@]host:port[/db]
	rediss://[user:password@]host:port[/db]
	redis-sentinel://[user:password@]host:port[,host:port...]/master[/db]

rediss:// uses TLS. redis-sentinel:// names the master that the sentinels
at host:port... monitor under the name master (rediss-sentinel:// for
TLS); user and password are the master's. A server in cluster mode is used
as a Redis Cluster. Without -redis or REDIS_URL, demo starts an embedded
in-process Redis.

Use "redisync help <command>" or "redisync <command> -h" for more
information about a command.
`

// runHelp prints the usage of the whole tool or of one command.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, mainUsage)
		return exitOK
	}
	var fs *flag.FlagSet
	switch args[0] {
	case "demo":
		fs, _ = demoFlags()
	case "inspect":
		fs, _ = inspectFlags()
	case "unlock":
		fs, _ = unlockFlags()
	case "delete":
		fs, _ = deleteFlags()
	case "version":
		fs = versionFlags()
	default:
		fmt.Fprintf(stderr, "redisync: help: unknown command %q\nRun 'redisync help' for usage.\n", args[0])
		return exitUsage
	}
	fs.SetOutput(stdout)
	fs.Usage()
	return exitOK
}

// usageError is a mistake on the command line: the exit status is 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// report prints err, if any, to stderr and returns the exit status.
func report(err error, cmd string, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "redisync: %s: %s\nRun 'redisync %s -h' for usage.\n", cmd, ue.msg, cmd)
		return exitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "redisync: %s: interrupted\n", cmd)
		return exitError
	}
	fmt.Fprintf(stderr, "redisync: %s: %s\n", cmd, strings.TrimPrefix(err.Error(), "redisync: "))
	return exitError
}

// parseFlags parses args with fs, allowing flags after positional
// arguments ("inspect NAME -json" as well as "inspect -json NAME"), as
// long as "--" does not end the flags. It returns the positional
// arguments. -h prints the usage to stdout and returns flag.ErrHelp; a bad
// flag is a usage error.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	// The flag package prints errors and the usage itself; report does.
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fs.Usage()
				return nil, flag.ErrHelp
			}
			return nil, usagef("%s", err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseName parses args with fs and returns the one positional argument,
// the NAME of the primitive, which must not be empty.
func parseName(fs *flag.FlagSet, args []string, stdout io.Writer) (string, error) {
	pos, err := parseFlags(fs, args, stdout)
	switch {
	case err != nil:
		return "", err
	case len(pos) != 1:
		return "", usagef("want exactly one NAME, got %d arguments", len(pos))
	case pos[0] == "":
		return "", usagef("empty NAME")
	}
	return pos[0], nil
}

// newFlagSet returns a flag set that reports errors instead of exiting;
// its usage (head, then the flags) goes to its output.
func newFlagSet(name, head string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), head)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// prefixFlag defines the -prefix flag of the commands that take a NAME.
func prefixFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "prefix", "", "the key `PREFIX` of the services' Clients (redisync.WithKeyPrefix): NAME is the name they give, the key is PREFIX+NAME")
}

// withPrefix returns name after prefix (-prefix), the key a Client made
// with redisync.WithKeyPrefix(prefix) uses for name; a prefix that option
// refuses (a brace) is a usage error.
func withPrefix(prefix, name string) (string, error) {
	if strings.ContainsAny(prefix, "{}") {
		return "", usagef("-prefix %q: a key prefix holds no brace (redisync.WithKeyPrefix refuses it)", prefix)
	}
	return prefix + name, nil
}
