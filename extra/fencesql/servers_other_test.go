//go:build !unix

package fencesql_test

import (
	"database/sql"
	"testing"
)

func startPostgres(t *testing.T) *sql.DB {
	needServer(t, "the tests start PostgreSQL only on Unix systems")
	return nil
}

func startMariaDB(t *testing.T) *sql.DB {
	needServer(t, "the tests start MariaDB only on Unix systems")
	return nil
}
