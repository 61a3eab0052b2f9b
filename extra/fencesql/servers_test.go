//go:build unix

package fencesql_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// The tests start their own PostgreSQL and MariaDB servers, each in a
// temporary directory, listening on a unix socket only (no TCP port to
// race for), with durability off (fsync, flushes) for speed. A server is
// started once per dialect's test and stopped when that test and its
// subtests end.

const (
	// serverReadyTimeout bounds a server's start, from its data directory's
	// creation to a successful ping. Generous: CI machines are small and
	// busy; on an idle one each takes about a second.
	serverReadyTimeout = 60 * time.Second
	// serverStopTimeout bounds a clean shutdown before SIGKILL.
	serverStopTimeout = 15 * time.Second
)

// server is a database server process the test started.
type server struct {
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

// startServer starts bin as cred's user (nil: this process's), with its
// output kept for failure messages, and stops it at the end of the test:
// stop first, SIGKILL after serverStopTimeout.
func startServer(t *testing.T, cred *syscall.Credential, stop os.Signal, bin string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = procAttr(cred)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	s := &server{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(stop)
		select {
		case <-s.done:
		case <-time.After(serverStopTimeout):
			t.Logf("%s did not stop within %v after %v; killing it", filepath.Base(bin), serverStopTimeout, stop)
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// waitReady pings db until it answers, the server exits or
// serverReadyTimeout passes; it fails the test with the server's output.
func (s *server) waitReady(t *testing.T, db *sql.DB, since time.Time) {
	t.Helper()
	var err error
	for time.Since(since) < serverReadyTimeout {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			t.Fatalf("%s exited before answering (%v): %v\n%s", s.cmd.Path, s.err, err, s.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not answer within %v: %v\n%s", s.cmd.Path, serverReadyTimeout, err, s.out)
}

// run runs a set-up command (initdb, mariadb-install-db) as cred's user.
func run(t *testing.T, cred *syscall.Credential, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = procAttr(cred)
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
}

// tempDir returns a new directory owned by cred's user, removed at the end
// of the test. It is not t.TempDir, whose parent only this process's user
// may enter, and it is short: a unix socket's path has at most 107 bytes.
func tempDir(t *testing.T, cred *syscall.Credential, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// findBin returns the first of the paths that is an executable file, or "".
func findBin(paths ...string) string {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			if lp, err := exec.LookPath(p); err == nil {
				return lp
			}
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// --- PostgreSQL -------------------------------------------------------------

// postgresBinDir returns a directory holding initdb and postgres: the one
// on PATH, else Debian's /usr/lib/postgresql/<version>/bin, the newest
// version first; "" when there is none.
func postgresBinDir() string {
	if p := findBin("initdb"); p != "" && findBin(filepath.Join(filepath.Dir(p), "postgres")) != "" {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if findBin(filepath.Join(d, "initdb")) != "" && findBin(filepath.Join(d, "postgres")) != "" {
			return d
		}
	}
	return ""
}

// version returns the major version in /usr/lib/postgresql/<version>/bin.
func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// postgresUser returns the credential to run PostgreSQL with: nil when
// this process is not root, else the postgres system user's (nobody's if
// there is none), since postgres refuses to run as root.
func postgresUser(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		}
	}
	t.Fatal("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as (it refuses to run as root)")
	return nil
}

// startPostgres starts a PostgreSQL server for the test and returns a
// connection pool to its postgres database.
func startPostgres(t *testing.T) *sql.DB {
	t.Helper()
	bin := postgresBinDir()
	if bin == "" {
		needServer(t, "PostgreSQL is not installed (no initdb and postgres on PATH or in /usr/lib/postgresql/*/bin; Debian package postgresql)")
	}
	began := time.Now()
	cred := postgresUser(t)
	dir := tempDir(t, cred, "fencesql-pg-")
	data := filepath.Join(dir, "data")
	run(t, cred, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-sync", "--no-instructions")
	// No TCP listener: the socket, in our own directory, cannot collide
	// with another server's, so any port number names it.
	const port = "5432"
	s := startServer(t, cred, os.Interrupt, filepath.Join(bin, "postgres"), "-D", data, "-p", port,
		"-c", "listen_addresses=", "-c", "unix_socket_directories="+dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	db, err := sql.Open("pgx", fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable", dir, port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // before the server stops
	s.waitReady(t, db, began)
	t.Logf("PostgreSQL (%s) ready in %v", bin, time.Since(began).Round(time.Millisecond))
	return db
}

// --- MariaDB ----------------------------------------------------------------

// startMariaDB starts a MariaDB server for the test and returns a
// connection pool to its database fencesql.
func startMariaDB(t *testing.T) *sql.DB {
	t.Helper()
	dirs := []string{"/usr/sbin/", "/usr/bin/", "/usr/local/sbin/", "/usr/local/bin/", "/opt/homebrew/bin/"}
	var paths []string
	for _, name := range []string{"mariadbd", "mariadb-install-db"} {
		cands := []string{name}
		for _, d := range dirs {
			cands = append(cands, d+name)
		}
		p := findBin(cands...)
		if p == "" {
			needServer(t, "MariaDB is not installed (no %s on PATH or in %s; Debian package mariadb-server)", name, strings.Join(dirs, ", "))
		}
		paths = append(paths, p)
	}
	mariadbd, installDB := paths[0], paths[1]
	began := time.Now()
	dir := tempDir(t, nil, "fencesql-my-")
	data := filepath.Join(dir, "data")
	var asRoot []string
	if os.Geteuid() == 0 {
		asRoot = []string{"--user=root"} // mariadbd refuses root otherwise
	}
	run(t, nil, installDB, append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, asRoot...)...)
	sock := filepath.Join(dir, "mysqld.sock")
	s := startServer(t, nil, syscall.SIGTERM, mariadbd, append([]string{"--no-defaults",
		"--datadir=" + data, "--socket=" + sock, "--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--tmpdir=" + dir, "--skip-networking", "--skip-grant-tables", "--skip-log-bin",
		"--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
		"--innodb-buffer-pool-size=32M", "--skip-name-resolve"}, asRoot...)...)
	root, err := sql.Open("mysql", "root@unix("+sock+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s.waitReady(t, root, began)
	if _, err := root.Exec("CREATE DATABASE fencesql"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", "root@unix("+sock+")/fencesql")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // before the server stops
	t.Logf("MariaDB (%s) ready in %v", mariadbd, time.Since(began).Round(time.Millisecond))
	return db
}

// tailBuffer keeps the last 64 KiB of a server's output.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if n := len(b.buf) - 64<<10; n > 0 {
		b.buf = append(b.buf[:0:0], b.buf[n:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
