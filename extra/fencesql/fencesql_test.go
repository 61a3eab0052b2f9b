package fencesql_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/extra/fencesql"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// database is one dialect under test: a real server the test started
// (PostgreSQL, MariaDB) or SQLite files, and fresh tables in it.
type database struct {
	dialect fencesql.Dialect
	db      *sql.DB // the server's pool; nil for SQLite (a file per table)
	tables  atomic.Int64
}

// startDatabase starts the dialect's server for t and its subtests.
func startDatabase(t *testing.T, d fencesql.Dialect) *database {
	t.Helper()
	switch d {
	case fencesql.Postgres:
		return &database{dialect: d, db: startPostgres(t)}
	case fencesql.MySQL:
		return &database{dialect: d, db: startMariaDB(t)}
	case fencesql.SQLite:
		return &database{dialect: d}
	}
	t.Fatalf("no database for %v", d)
	return nil
}

// table creates a new table (k text key, v text value, fence token) and
// returns it with the pool that reaches it.
func (d *database) table(t *testing.T) (fencesql.Table, *sql.DB) {
	t.Helper()
	name := fmt.Sprintf("state_%d", d.tables.Add(1))
	db := d.db
	ddl := "CREATE TABLE %s (k VARCHAR(64) PRIMARY KEY, v TEXT NOT NULL, fence BIGINT NOT NULL)"
	if d.dialect == fencesql.SQLite {
		var err error
		db, err = sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db")+"?_pragma=busy_timeout(10000)")
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
	}
	_, err := db.Exec(fmt.Sprintf(ddl, name))
	require.NoError(t, err)
	return fencesql.Table{Dialect: d.dialect, Name: name, ID: "k", Value: "v", Token: "fence"}, db
}

// row reads the row k of tb: its value and token, or ok false when there
// is none.
func (d *database) row(t *testing.T, db *sql.DB, tb fencesql.Table, k string) (v string, tok int64, ok bool) {
	t.Helper()
	q := "SELECT v, fence FROM " + tb.Name + " WHERE k = ?"
	if d.dialect == fencesql.Postgres {
		q = strings.Replace(q, "?", "$1", 1)
	}
	err := db.QueryRow(q, k).Scan(&v, &tok)
	if err == sql.ErrNoRows {
		return "", 0, false
	}
	require.NoError(t, err)
	return v, tok, true
}

// counter is a Querier that counts the calls it passes on to a real
// database, to show that an invalid call sends nothing.
type counter struct {
	fencesql.Querier
	calls atomic.Int64
}

func (c *counter) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.calls.Add(1)
	return c.Querier.ExecContext(ctx, q, args...)
}

func (c *counter) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	c.calls.Add(1)
	return c.Querier.QueryRowContext(ctx, q, args...)
}

// suite is the behaviour every dialect must show, on a real database.
var suite = []struct {
	name string
	run  func(t *testing.T, d *database)
}{
	{"Set", testSet},
	{"StaleRefusedChangesNothing", testStaleRefused},
	{"SameTokenRewrites", testSameToken},
	{"ConcurrentWriters", testConcurrentWriters},
	{"StaleHoldersOfARedisLock", testStaleHolders},
	{"Transaction", testTransaction},
	{"LockingReadInTransaction", testLockingRead},
	{"InvalidArguments", testInvalidArguments},
}

// TestDialects runs the suite on PostgreSQL and MariaDB servers that it
// starts, and on SQLite; each server is stopped when its dialect's tests
// end.
func TestDialects(t *testing.T) {
	t.Parallel()
	for _, dialect := range []fencesql.Dialect{fencesql.Postgres, fencesql.MySQL, fencesql.SQLite} {
		t.Run(dialect.String(), func(t *testing.T) {
			t.Parallel()
			d := startDatabase(t, dialect)
			for _, c := range suite {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, d)
				})
			}
		})
	}
}

func testSet(t *testing.T, d *database) {
	ctx := context.Background()
	tb, db := d.table(t)
	for _, step := range []struct {
		token int64
		value string
		ok    bool
	}{
		{5, "a", true}, // inserted
		{5, "b", true}, // the same holder again
		{4, "stale", false},
		{9, "c", true},
		{6, "stale", false},
		{1 << 62, "big", true},
	} {
		ok, err := tb.Set(ctx, db, "x", step.token, step.value)
		require.NoError(t, err)
		assert.Equal(t, step.ok, ok, "token %d", step.token)
	}
	v, tok, _ := d.row(t, db, tb, "x")
	assert.Equal(t, "big", v)
	assert.EqualValues(t, int64(1)<<62, tok)

	// Other rows are their own.
	ok, err := tb.Set(ctx, db, "y", 1, "first")
	require.NoError(t, err)
	assert.True(t, ok)
	v, tok, _ = d.row(t, db, tb, "y")
	assert.Equal(t, "first", v)
	assert.EqualValues(t, 1, tok)

	// Default column names.
	_, err = db.Exec("CREATE TABLE plain_" + tb.Name + " (id BIGINT PRIMARY KEY, value TEXT NOT NULL, token BIGINT NOT NULL)")
	require.NoError(t, err)
	plain := fencesql.Table{Dialect: d.dialect, Name: "plain_" + tb.Name}
	ok, err = plain.Set(ctx, db, 7, 3, "shipped")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = plain.Set(ctx, db, 7, 2, "cancelled")
	require.NoError(t, err)
	assert.False(t, ok)
}

func testStaleRefused(t *testing.T, d *database) {
	ctx := context.Background()
	tb, db := d.table(t)
	ok, err := tb.Set(ctx, db, "x", 10, "newer")
	require.NoError(t, err)
	require.True(t, ok)
	for _, stale := range []int64{9, 1, 5} {
		for _, value := range []string{"older", "newer"} { // a different value, and the same
			ok, err := tb.Set(ctx, db, "x", stale, value)
			require.NoError(t, err)
			assert.False(t, ok, "token %d, value %q", stale, value)
			v, tok, _ := d.row(t, db, tb, "x")
			assert.Equal(t, "newer", v, "nothing changed")
			assert.EqualValues(t, 10, tok, "nothing changed")
		}
	}
}

func testSameToken(t *testing.T, d *database) {
	ctx := context.Background()
	tb, db := d.table(t)
	// The same value again too: MySQL counts no affected row for it.
	for i, value := range []string{"a", "a", "b", "b", "a"} {
		ok, err := tb.Set(ctx, db, "x", 3, value)
		require.NoError(t, err)
		assert.True(t, ok, "write %d (%q)", i, value)
		v, tok, _ := d.row(t, db, tb, "x")
		assert.Equal(t, value, v)
		assert.EqualValues(t, 3, tok)
	}
}

// Writers on their own connections, with increasing tokens handed out
// in turn: the row ends with the largest token and its value, every write
// of the largest token succeeds, and a token below it is refused after.
func testConcurrentWriters(t *testing.T, d *database) {
	ctx := context.Background()
	tb, db := d.table(t)
	const writers, writes = 8, 25
	var next atomic.Int64
	type result struct {
		token int64
		ok    bool
	}
	results := make([][]result, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range writes {
				tok := next.Add(1)
				ok, err := tb.Set(ctx, db, "x", tok, fmt.Sprint(tok))
				if !assert.NoError(t, err, "token %d", tok) {
					return
				}
				results[w] = append(results[w], result{tok, ok})
			}
		}()
	}
	wg.Wait()
	const last = writers * writes
	v, tok, _ := d.row(t, db, tb, "x")
	assert.EqualValues(t, last, tok)
	assert.Equal(t, fmt.Sprint(last), v)
	written := 0
	for _, rs := range results {
		for _, r := range rs {
			if r.token == last {
				assert.True(t, r.ok, "the largest token writes")
			}
			if r.ok {
				written++
			}
		}
	}
	assert.Positive(t, written)
	ok, err := tb.Set(ctx, db, "x", last-1, "stale")
	require.NoError(t, err)
	assert.False(t, ok)
	t.Logf("%d of %d writes landed", written, last)
}

// Holders of a real fenced lock on a real redis-server, each paused past
// its lease before it writes: whatever order the writes land in, the row
// ends with the last holder's value, and every stale write is refused.
func testStaleHolders(t *testing.T, d *database) {
	ctx := context.Background()
	tb, db := d.table(t)
	c := redisync.New(redistest.Shared(t).Client(t))
	t.Cleanup(func() { c.Close() })
	l := rlock.New(c, redistest.Key(t, "lock"), rlock.WithFencing())
	var tokens []int64
	for range 10 {
		require.NoError(t, l.Lock(ctx))
		tokens = append(tokens, l.FencingToken())
		require.NoError(t, l.Unlock(ctx))
	}
	var wg sync.WaitGroup
	results := make([]bool, len(tokens))
	for i := len(tokens) - 1; i >= 0; i-- { // the newest first, then the stale ones
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := tb.Set(ctx, db, "k", tokens[i], fmt.Sprint("holder ", i))
			assert.NoError(t, err)
			results[i] = ok
		}()
		if i == len(tokens)-1 {
			wg.Wait()
		}
	}
	wg.Wait()
	assert.True(t, results[len(tokens)-1], "the newest holder writes")
	v, tok, _ := d.row(t, db, tb, "k")
	assert.Equal(t, tokens[len(tokens)-1], tok, "the newest token stays")
	assert.Equal(t, fmt.Sprint("holder ", len(tokens)-1), v)
	for i, ok := range results[:len(tokens)-1] {
		assert.False(t, ok, "stale holder %d", i)
	}
}

// Set inside the transaction that does the holder's work: a refused write
// rolls the work back, an accepted one commits with it.
func testTransaction(t *testing.T, d *database) {
	ctx := context.Background()
	tb, db := d.table(t)
	for _, step := range []struct {
		token int64
		value string
		ok    bool
	}{
		{2, "first", true},
		{1, "stale", false},
		{2, "again", true},
		{3, "third", true},
	} {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		ok, err := tb.Set(ctx, tx, "x", step.token, step.value)
		require.NoError(t, err)
		assert.Equal(t, step.ok, ok, "token %d", step.token)
		if ok {
			require.NoError(t, tx.Commit())
		} else {
			require.NoError(t, tx.Rollback())
		}
	}
	v, tok, _ := d.row(t, db, tb, "x")
	assert.Equal(t, "third", v)
	assert.EqualValues(t, 3, tok)
}

// A transaction that read the row before a newer holder committed still
// sees, on MySQL's REPEATABLE READ, the row as it was then; Set must judge
// by the row as it is (a locking read), or the holder's rewrite of its own
// value would pass though the newer holder owns the row.
func testLockingRead(t *testing.T, d *database) {
	if d.dialect == fencesql.SQLite {
		t.Skip("SQLite runs one writer at a time: a reader's transaction makes the newer holder wait, the case cannot occur")
	}
	ctx := context.Background()
	tb, db := d.table(t)
	ok, err := tb.Set(ctx, db, "x", 5, "mine")
	require.NoError(t, err)
	require.True(t, ok)

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck // after the commit or rollback below
	q := "SELECT v FROM " + tb.Name + " WHERE k = ?"
	if d.dialect == fencesql.Postgres {
		q = strings.Replace(q, "?", "$1", 1)
	}
	var v string
	require.NoError(t, tx.QueryRowContext(ctx, q, "x").Scan(&v)) // the snapshot
	ok, err = tb.Set(ctx, db, "x", 6, "newer")                   // another holder, committed
	require.NoError(t, err)
	require.True(t, ok)

	ok, err = tb.Set(ctx, tx, "x", 5, "mine") // the same token and value as stored before
	require.NoError(t, err)
	assert.False(t, ok, "the row holds a newer token")
	require.NoError(t, tx.Rollback())
	v, tok, _ := d.row(t, db, tb, "x")
	assert.Equal(t, "newer", v)
	assert.EqualValues(t, 6, tok)
}

// Invalid arguments are refused with ErrInvalidArgument before anything
// is sent.
func testInvalidArguments(t *testing.T, d *database) {
	ctx := context.Background()
	tb, db := d.table(t)
	q := &counter{Querier: db}
	for name, call := range map[string]func() (bool, error){
		"token 0":    func() (bool, error) { return tb.Set(ctx, q, "x", 0, "v") },
		"token -1":   func() (bool, error) { return tb.Set(ctx, q, "x", -1, "v") },
		"no dialect": func() (bool, error) { return fencesql.Table{Name: tb.Name}.Set(ctx, q, "x", 1, "v") },
		"unknown":    func() (bool, error) { return fencesql.Table{Dialect: 99, Name: tb.Name}.Set(ctx, q, "x", 1, "v") },
		"no name":    func() (bool, error) { return fencesql.Table{Dialect: d.dialect}.Set(ctx, q, "x", 1, "v") },
		"injection": func() (bool, error) {
			return fencesql.Table{Dialect: d.dialect, Name: "t; DROP TABLE t"}.Set(ctx, q, "x", 1, "v")
		},
		"quoted column": func() (bool, error) {
			return fencesql.Table{Dialect: d.dialect, Name: tb.Name, ID: `"k"`}.Set(ctx, q, "x", 1, "v")
		},
		"digit first": func() (bool, error) { return fencesql.Table{Dialect: d.dialect, Name: "1t"}.Set(ctx, q, "x", 1, "v") },
		"columns repeat": func() (bool, error) {
			return fencesql.Table{Dialect: d.dialect, Name: tb.Name, Value: "token"}.Set(ctx, q, "x", 1, "v")
		},
	} {
		ok, err := call()
		assert.False(t, ok, name)
		assert.ErrorIs(t, err, redisync.ErrInvalidArgument, name)
	}
	assert.Zero(t, q.calls.Load(), "nothing was sent")
	_, _, found := d.row(t, db, tb, "x")
	assert.False(t, found)

	_, err := fencesql.Table{Name: "orders"}.Set(ctx, q, 1, 1, "v")
	assert.ErrorContains(t, err, "fencesql.Postgres, fencesql.MySQL or fencesql.SQLite", "the message names the fix")
}

// needServer reports a server binary that is not installed: a failure
// with CI=true, where scripts/test.sh installs it, and a skip with the
// same message, printed also without -v, elsewhere.
func needServer(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + "; scripts/test.sh (make test) installs it with apt-get"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	fmt.Fprintf(os.Stderr, "\n!!! %s: SKIPPED: %s\n\n", t.Name(), msg)
	t.Skip(msg)
}
