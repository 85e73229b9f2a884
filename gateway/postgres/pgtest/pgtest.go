// Package pgtest gives tests a fresh, migrated PostgreSQL store in a schema
// of its own, so that tests (of any package) run isolated and in parallel
// against one database.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/postgres"
)

// EnvURL names the environment variable holding the test database URL,
// e.g. postgres://mcpgate:mcpgate@127.0.0.1:5432/mcpgate_test?sslmode=disable.
const EnvURL = "MCPGATE_TEST_DATABASE_URL"

// maxConnsPerStore bounds each test store's pool so that many parallel tests
// stay under PostgreSQL's default max_connections (100).
const maxConnsPerStore = 4

var (
	adminOnce sync.Once
	adminDB   *sql.DB
	adminErr  error
)

// admin returns one shared pool used only to create and drop schemas.
func admin(dsn string) (*sql.DB, error) {
	adminOnce.Do(func() {
		adminDB, adminErr = sql.Open("postgres", dsn)
		if adminErr == nil {
			adminDB.SetMaxOpenConns(2)
		}
	})
	return adminDB, adminErr
}

// URL returns the test database URL, skipping t (with how to set it) when
// MCPGATE_TEST_DATABASE_URL is unset.
func URL(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvURL)
	if dsn == "" {
		t.Skip(EnvURL + " is unset; to run the PostgreSQL tests set it, e.g. " + EnvURL +
			"=postgres://mcpgate:mcpgate@127.0.0.1:5432/mcpgate_test?sslmode=disable (make test sets it)")
	}
	return dsn
}

// New returns a migrated store in a new schema of the test database; the
// schema is dropped and the store closed when t ends. It skips t when
// MCPGATE_TEST_DATABASE_URL is unset and fails t when the database cannot
// be reached.
func New(t testing.TB) *postgres.Store {
	t.Helper()
	s, _ := NewWithURL(t)
	return s
}

// NewWithURL is New that also returns the URL of the store's schema, for
// tests that open a second store on the same data (e.g. two replicas).
func NewWithURL(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schemaURL := SchemaURL(t)
	s, err := postgres.Open(ctx, schemaURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s.DB().SetMaxOpenConns(maxConnsPerStore)
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return s, schemaURL
}

// SchemaURL creates a new, empty schema in the test database and returns a
// URL whose search_path selects it; the schema is dropped when t ends. It
// skips t when MCPGATE_TEST_DATABASE_URL is unset.
func SchemaURL(t testing.TB) string {
	t.Helper()
	dsn := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return withSearchPath(dsn, createSchema(t, ctx, dsn))
}

// createSchema creates a uniquely named schema and registers its removal.
func createSchema(t testing.TB, ctx context.Context, dsn string) string {
	t.Helper()
	db, err := admin(dsn)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "test_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema (is PostgreSQL running and %s right?): %v", EnvURL, err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// withSearchPath adds search_path=schema to a URL or key=value DSN; lib/pq
// passes it to the server as a run-time parameter.
func withSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " search_path=" + schema
}
