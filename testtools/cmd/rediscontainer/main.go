// Command rediscontainer starts a redis:7 container with testcontainers-go,
// prints its "host:port" on a line of its own on stdout, and removes the
// container when its stdin is closed (or on SIGINT/SIGTERM).
//
// It is run by the test harness in internal/redistest (with "go run" from the
// testtools module directory) when no redis-server binary is installed but a
// Docker engine is reachable. Arguments are passed to redis-server in the
// container, after the harness defaults (--save "" --appendonly no
// --protected-mode no).
//
// Usage:
//
//	go run ./cmd/rediscontainer [redis-server args...]
//
// Exit status is 0 after the container was removed, 1 if the container could
// not be started or removed. Diagnostics go to stderr; stdout carries only
// the address.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// image is the container image started; redisync supports Redis 7.
const image = "redis:7"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "rediscontainer:", err)
		os.Exit(1)
	}
}

func run(extra []string) (err error) {
	// testcontainers-go panics when it finds no Docker host; report that
	// as an error like any other start failure.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("testcontainers: %v", r)
		}
	}()

	startCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	cmd := append([]string{"redis-server", "--save", "", "--appendonly", "no", "--protected-mode", "no"}, extra...)
	c, err := testcontainers.GenericContainer(startCtx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        image,
			Cmd:          cmd,
			ExposedPorts: []string{"6379/tcp"},
			WaitingFor:   wait.ForLog("Ready to accept connections").WithStartupTimeout(time.Minute),
		},
		Started: true,
	})
	if err != nil {
		if c != nil {
			_ = testcontainers.TerminateContainer(c)
		}
		return fmt.Errorf("start %s: %w", image, err)
	}

	endpoint, err := c.PortEndpoint(startCtx, "6379/tcp", "")
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return fmt.Errorf("endpoint: %w", err)
	}
	fmt.Println(endpoint)

	// Wait for the harness to close our stdin (it does so when the test
	// stops the server, and the OS does so when the test binary dies), or
	// for a signal.
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}

	if err := testcontainers.TerminateContainer(c); err != nil {
		return fmt.Errorf("remove container: %w", err)
	}
	return nil
}
