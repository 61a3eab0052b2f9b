// Package fencesql checks a lock's fencing token where the data lives: in
// a SQL table, with a conditional write that refuses a token lower than
// the one stored in the row.
//
// A holder paused past its lease (a GC pause, a stalled VM, a partition)
// may write after another process took the lock; with rlock.WithFencing
// every hold carries a larger token than every earlier one, and the
// database refuses the stale write when the row keeps the token of the
// last write:
//
//	UPDATE orders SET value = ?, token = ? WHERE id = ? AND token <= ?
//
// and, for a row that does not exist yet,
//
//	INSERT INTO orders (id, value, token) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING
//
// [Table.Set] sends exactly that: one UPDATE, and when it changed no row,
// the INSERT (and the UPDATE again when a concurrent writer inserted the
// row first). It reports whether the value was written. The statements are
// SQLite's and PostgreSQL's (ON CONFLICT DO NOTHING; on MySQL, INSERT
// IGNORE does the same); the examples and tests run them on SQLite
// (modernc.org/sqlite, pure Go) with a real Redis lock.
//
// The module is separate from github.com/redisync/redisync so that the
// library does not depend on a SQL driver: this package itself needs only
// database/sql, and the driver is the application's choice.
package fencesql
