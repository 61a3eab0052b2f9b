package fencesql_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/extra/fencesql"
	"github.com/redisync/redisync/rlock"
)

// A fenced Redis lock guards a row of a SQLite database. The first holder
// is paused past its lease; the next holder writes; the first one's late
// write carries a lower token and the database refuses it.
func ExampleTable_Set() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fencesql")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "orders.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	_, _ = db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, value TEXT NOT NULL, token INTEGER NOT NULL)`)
	orders := fencesql.Table{Dialect: fencesql.SQLite, Name: "orders"}

	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	l := rlock.New(c, "example:fencesql:order:7", rlock.WithFencing())
	defer c.Redis().Del(ctx, "redisson_lock_token:{example:fencesql:order:7}")

	_ = l.Lock(ctx)
	stale := l.FencingToken() // the first holder's token
	_ = l.Unlock(ctx)         // (as if its lease ran out while it was paused)

	_ = l.Lock(ctx) // the next holder
	ok, err := orders.Set(ctx, db, 7, l.FencingToken(), "shipped")
	fmt.Println("newer holder writes:", ok, err)
	_ = l.Unlock(ctx)

	ok, err = orders.Set(ctx, db, 7, stale, "cancelled") // the paused holder wakes up
	fmt.Println("stale holder writes:", ok, err)

	var value string
	_ = db.QueryRowContext(ctx, `SELECT value FROM orders WHERE id = 7`).Scan(&value)
	fmt.Println("row:", value)
	// Output:
	// newer holder writes: true <nil>
	// stale holder writes: false <nil>
	// row: shipped
}

// A Table names its database's dialect; the driver is the application's
// choice (here pgx's database/sql driver and go-sql-driver/mysql).
func ExampleDialect() {
	ctx := context.Background()

	// PostgreSQL: CREATE TABLE orders (id BIGINT PRIMARY KEY, value TEXT NOT NULL, token BIGINT NOT NULL)
	pg, err := sql.Open("pgx", "postgres://app@localhost:5432/shop")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pg.Close()
	orders := fencesql.Table{Dialect: fencesql.Postgres, Name: "orders"}
	ok, err := orders.Set(ctx, pg, 7, 42, "shipped")
	fmt.Println(ok, err)

	// MySQL or MariaDB: the same table, with ? placeholders and
	// ON DUPLICATE KEY UPDATE.
	my, err := sql.Open("mysql", "app@tcp(localhost:3306)/shop")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer my.Close()
	accounts := fencesql.Table{Dialect: fencesql.MySQL, Name: "accounts", ID: "account_id", Value: "balance", Token: "fence"}
	ok, err = accounts.Set(ctx, my, "acct-1", 42, 1250)
	fmt.Println(ok, err)
}
