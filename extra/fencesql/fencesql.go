package fencesql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"

	"github.com/redisync/redisync"
)

// Querier runs statements and queries: a *sql.DB, *sql.Tx or *sql.Conn.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Dialect is the SQL database a [Table] is written in: it decides the
// placeholders and the conditional upsert that [Table.Set] sends. The zero
// Dialect is none: a Table must name its database.
type Dialect int

const (
	// Postgres is PostgreSQL 9.5 or later (and databases that speak its
	// SQL): $1 placeholders, INSERT … ON CONFLICT (id) DO UPDATE … WHERE.
	Postgres Dialect = iota + 1
	// MySQL is MySQL 5.7 or later and MariaDB 10.3 or later: ?
	// placeholders, INSERT … ON DUPLICATE KEY UPDATE with IF.
	MySQL
	// SQLite is SQLite 3.24 or later: ? placeholders,
	// INSERT … ON CONFLICT (id) DO UPDATE … WHERE.
	SQLite
)

// String returns the dialect's name: "Postgres", "MySQL", "SQLite", or
// "Dialect(n)" for a value that is none of them.
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "Postgres"
	case MySQL:
		return "MySQL"
	case SQLite:
		return "SQLite"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// Table names a table whose rows are written with fencing tokens, and the
// database it lives in. The table has a primary key (or unique) column,
// the value column and the token column, an integer that is not NULL.
// The names are SQL identifiers, put into the statements as they are
// (letters, digits and underscores, not starting with a digit); empty
// column names default to id, value and token.
//
// Dialect is required: a Table without one (or with a value that is none
// of the constants) makes [Table.Set] return an error wrapping
// redisync.ErrInvalidArgument before anything is sent. There is no
// default, because each database takes other placeholders and another
// upsert, and the wrong one fails at the server with a syntax error.
type Table struct {
	Dialect Dialect // Postgres, MySQL or SQLite
	Name    string
	ID      string // default "id"
	Value   string // default "value"
	Token   string // default "token"
}

// identifier is what a table or column name may be.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// upsert returns the statement that Set sends, with its arguments in the
// order id, value, token, or an error wrapping redisync.ErrInvalidArgument
// for a missing dialect or a name that is no plain identifier.
func (t Table) upsert() (string, error) {
	id, value, token := def(t.ID, "id"), def(t.Value, "value"), def(t.Token, "token")
	for _, n := range []string{t.Name, id, value, token} {
		if !identifier.MatchString(n) {
			return "", fmt.Errorf("fencesql: table or column name %q is not a plain SQL identifier: %w", n, redisync.ErrInvalidArgument)
		}
	}
	if id == value || id == token || value == token {
		return "", fmt.Errorf("fencesql: the id, value and token columns must differ (%s, %s, %s): %w", id, value, token, redisync.ErrInvalidArgument)
	}
	switch t.Dialect {
	case Postgres:
		// The WHERE of DO UPDATE keeps the stored row when its token is
		// higher; the command tag then counts 0 rows.
		return fmt.Sprintf("INSERT INTO %[1]s (%[2]s, %[3]s, %[4]s) VALUES ($1, $2, $3) "+
			"ON CONFLICT (%[2]s) DO UPDATE SET %[3]s = EXCLUDED.%[3]s, %[4]s = EXCLUDED.%[4]s "+
			"WHERE %[1]s.%[4]s <= EXCLUDED.%[4]s", t.Name, id, value, token), nil
	case SQLite:
		return fmt.Sprintf("INSERT INTO %[1]s (%[2]s, %[3]s, %[4]s) VALUES (?, ?, ?) "+
			"ON CONFLICT (%[2]s) DO UPDATE SET %[3]s = excluded.%[3]s, %[4]s = excluded.%[4]s "+
			"WHERE %[1]s.%[4]s <= excluded.%[4]s", t.Name, id, value, token), nil
	case MySQL:
		// Both IFs compare the stored token with the writer's. MySQL
		// assigns left to right, and a later assignment sees the column as
		// the earlier ones left it: the value comes first, while the token
		// is still the stored one. (The other order would give the same
		// result, as a raised token equals the writer's and passes the
		// same test, but this one does not rely on it.)
		return fmt.Sprintf("INSERT INTO %[1]s (%[2]s, %[3]s, %[4]s) VALUES (?, ?, ?) "+
			"ON DUPLICATE KEY UPDATE "+
			"%[3]s = IF(%[4]s <= VALUES(%[4]s), VALUES(%[3]s), %[3]s), "+
			"%[4]s = IF(%[4]s <= VALUES(%[4]s), VALUES(%[4]s), %[4]s)", t.Name, id, value, token), nil
	}
	if t.Dialect == 0 {
		return "", fmt.Errorf("fencesql: table %s has no Dialect; set it to fencesql.Postgres, fencesql.MySQL or fencesql.SQLite: %w", t.Name, redisync.ErrInvalidArgument)
	}
	return "", fmt.Errorf("fencesql: table %s: %v is not fencesql.Postgres, fencesql.MySQL or fencesql.SQLite: %w", t.Name, t.Dialect, redisync.ErrInvalidArgument)
}

// readToken returns the MySQL statement that reads the row's token with a
// locking read: inside a transaction a plain SELECT would read the
// transaction's snapshot, which may be older than the row the upsert saw.
func (t Table) readToken() string {
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? FOR UPDATE", def(t.Token, "token"), t.Name, def(t.ID, "id"))
}

func def(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Set writes value to the row id with the writer's fencing token, unless
// the row holds a higher token, and reports whether it wrote: false means a
// newer holder of the lock wrote first, and nothing was changed. The same
// token may write several times. A token below 1 is an invalid argument
// (fencing tokens start at 1), and so is a Table without a Dialect or with
// a name that is no plain identifier; then nothing is sent. Run it in the
// transaction that does the rest of the holder's work, so that a refused
// write can roll it back.
//
// Set sends one statement, an insert that updates the existing row only
// when its token is at most the writer's (see the package documentation
// for each dialect's). On MySQL and MariaDB, whose affected-rows count is
// the same for a refused write and for a rewrite of the row's own value and
// token, Set reads the row's token back (SELECT … FOR UPDATE) when the
// count does not show an update: the write counts as done when the row
// holds the writer's token. Outside a transaction a newer holder may write
// between the two statements; Set then reports false, as the row holds the
// newer holder's value.
func (t Table) Set(ctx context.Context, db Querier, id any, token int64, value any) (bool, error) {
	upsert, err := t.upsert()
	if err != nil {
		return false, err
	}
	if token < 1 {
		return false, fmt.Errorf("fencesql: fencing token %d, must be at least 1: %w", token, redisync.ErrInvalidArgument)
	}
	res, err := db.ExecContext(ctx, upsert, id, value, token)
	if err != nil {
		return false, fmt.Errorf("fencesql: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("fencesql: %w", err)
	}
	if t.Dialect != MySQL {
		return n > 0, nil
	}
	// MySQL counts 1 for an insert, 2 for an update that changed the row,
	// and 0 for a row left as it was (1 with CLIENT_FOUND_ROWS, the
	// driver's clientFoundRows): a refused write, or the same token
	// writing the same value again.
	if n == 2 {
		return true, nil
	}
	var stored int64
	err = db.QueryRowContext(ctx, t.readToken(), id).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // deleted since
	}
	if err != nil {
		return false, fmt.Errorf("fencesql: %w", err)
	}
	return stored == token, nil
}
