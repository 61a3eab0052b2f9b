package fencesql

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"

	"github.com/redisync/redisync"
)

// Execer runs a statement: a *sql.DB, *sql.Tx or *sql.Conn.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Table names a table whose rows are written with fencing tokens: a
// primary key (or unique) column, the value and the token, an integer
// column. The names are SQL identifiers, put into the statements as they
// are (they must be letters, digits and underscores, not starting with a
// digit); empty column names default to id, value and token.
type Table struct {
	Name  string
	ID    string // default "id"
	Value string // default "value"
	Token string // default "token"
}

// identifier is what a table or column name may be.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// statements returns the UPDATE and INSERT of Set, or an error wrapping
// redisync.ErrInvalidArgument for a name that is no plain identifier.
func (t Table) statements() (update, insert string, err error) {
	id, value, token := def(t.ID, "id"), def(t.Value, "value"), def(t.Token, "token")
	for _, n := range []string{t.Name, id, value, token} {
		if !identifier.MatchString(n) {
			return "", "", fmt.Errorf("fencesql: table or column name %q is not a plain SQL identifier: %w", n, redisync.ErrInvalidArgument)
		}
	}
	update = fmt.Sprintf("UPDATE %s SET %s = ?, %s = ? WHERE %s = ? AND %s <= ?", t.Name, value, token, id, token)
	insert = fmt.Sprintf("INSERT INTO %s (%s, %s, %s) VALUES (?, ?, ?) ON CONFLICT (%s) DO NOTHING", t.Name, id, value, token, id)
	return update, insert, nil
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
// (fencing tokens start at 1). Run it in the transaction that does the
// rest of the holder's work, so that a refused write can roll it back.
func (t Table) Set(ctx context.Context, db Execer, id any, token int64, value any) (bool, error) {
	update, insert, err := t.statements()
	if err != nil {
		return false, err
	}
	if token < 1 {
		return false, fmt.Errorf("fencesql: fencing token %d, must be at least 1: %w", token, redisync.ErrInvalidArgument)
	}
	if ok, err := exec(ctx, db, update, value, token, id, token); err != nil || ok {
		return ok, err
	}
	// No row changed: the row is missing, or its token is higher.
	if ok, err := exec(ctx, db, insert, id, value, token); err != nil || ok {
		return ok, err
	}
	// The row exists: a higher token, or a concurrent writer inserted it
	// between our two statements, whose token the UPDATE compares now.
	return exec(ctx, db, update, value, token, id, token)
}

// exec runs a statement and reports whether it changed a row.
func exec(ctx context.Context, db Execer, query string, args ...any) (bool, error) {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("fencesql: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("fencesql: %w", err)
	}
	return n > 0, nil
}
