// Package fencesql checks a lock's fencing token where the data lives: in
// a SQL table, with a conditional write that refuses a token lower than
// the one stored in the row.
//
// A holder paused past its lease (a GC pause, a stalled VM, a partition)
// may write after another process took the lock; with rlock.WithFencing
// every hold carries a larger token than every earlier one, and the
// database refuses the stale write when the row keeps the token of the
// last write. [Table.Set] writes a row's value with the writer's token and
// reports whether it wrote: false means a newer holder wrote first, and
// nothing was changed.
//
// # Databases
//
// PostgreSQL, MySQL, MariaDB and SQLite are supported. Each takes other
// placeholders and another upsert, so a [Table] names its [Dialect], and a
// Table without one is refused (redisync.ErrInvalidArgument) before
// anything is sent:
//
//	orders := fencesql.Table{Dialect: fencesql.Postgres, Name: "orders"}
//	ok, err := orders.Set(ctx, tx, id, l.FencingToken(), "shipped")
//
// The table needs a primary key (or unique) column, the value column and a
// token column, an integer that is not NULL (BIGINT: tokens are int64):
//
//	CREATE TABLE orders (id BIGINT PRIMARY KEY, value TEXT NOT NULL, token BIGINT NOT NULL)
//
// Set sends one statement. [Postgres] (PostgreSQL 9.5 or later):
//
//	INSERT INTO orders (id, value, token) VALUES ($1, $2, $3)
//	ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value, token = EXCLUDED.token
//	WHERE orders.token <= EXCLUDED.token
//
// [SQLite] (3.24 or later): the same with ? placeholders. [MySQL] (MySQL
// 5.7 or later, MariaDB 10.3 or later):
//
//	INSERT INTO orders (id, value, token) VALUES (?, ?, ?)
//	ON DUPLICATE KEY UPDATE
//	  value = IF(token <= VALUES(token), VALUES(value), value),
//	  token = IF(token <= VALUES(token), VALUES(token), token)
//
// MySQL's affected-rows count does not tell a refused write from the same
// token writing the same value again, so when it shows no update Set reads
// the row's token back (SELECT token FROM orders WHERE id = ? FOR UPDATE,
// a locking read, which sees the row as it is and not as a transaction's
// snapshot saw it): the write counts as done when the row holds the
// writer's token. MySQL 8.0.20 and later accept VALUES() with a
// deprecation warning; MariaDB has no other spelling.
//
// Run Set in the transaction that does the rest of the holder's work, so
// that a refused write rolls the work back. Concurrent writers are safe:
// each statement compares and writes one row atomically. In a transaction
// of isolation REPEATABLE READ or SERIALIZABLE on PostgreSQL, a row that a
// concurrent transaction changed gives the database's serialization error,
// which Set returns.
//
// The tests run every dialect against a real server they start
// (PostgreSQL 15, MariaDB 10.11, SQLite through modernc.org/sqlite) with a
// real Redis lock.
//
// The module is separate from github.com/redisync/redisync so that the
// library does not depend on a SQL driver: this package itself needs only
// database/sql, and the driver is the application's choice (for example
// github.com/jackc/pgx/v5/stdlib, github.com/go-sql-driver/mysql,
// modernc.org/sqlite).
package fencesql
