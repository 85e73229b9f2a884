package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"regexp"
	"strings"

	"modernc.org/sqlite"
	lib "modernc.org/sqlite/lib"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/migrations"
)

// msgs holds what one operation says to people when the database refuses
// it: notFound for no rows or a missing parent (SQLite's foreign-key errors
// do not name the parent, so the operation must), conflict for a unique
// violation. Empty fields fall back to generic messages.
type msgs struct {
	notFound string
	conflict string
}

// checkName extracts the constraint name from SQLite's CHECK error text.
var checkName = regexp.MustCompile(`CHECK constraint failed: (\w+)`)

// translate turns a driver error into a *gateway.Error before it leaves the
// package (one error type, translated where the driver error arises): no rows and foreign-key
// violations → ENotFound, unique violations → EConflict, CHECK, NOT NULL and
// type errors → EInvalid, busy/locked/I/O failures → EUnavailable, the rest
// → EInternal. *gateway.Error values pass through; nil stays nil.
func translate(err error, m msgs) error {
	if err == nil {
		return nil
	}
	var ge *gateway.Error
	if errors.As(err, &ge) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return gateway.Wrap(gateway.ENotFound, err, or(m.notFound, "record not found"))
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		if e := translateCode(se, m); e != nil {
			return e
		}
	}
	if isUnavailable(err) {
		return gateway.Wrap(gateway.EUnavailable, err,
			"audit store unavailable: the SQLite database did not answer; retry shortly, and check the disk if it persists")
	}
	return gateway.Wrap(gateway.EInternal, err, "audit store error; the gateway logged the cause")
}

// translateCode maps an SQLite result code; nil means "no specific class".
func translateCode(se *sqlite.Error, m msgs) error {
	switch code := se.Code(); code {
	case lib.SQLITE_CONSTRAINT_UNIQUE, lib.SQLITE_CONSTRAINT_PRIMARYKEY:
		return gateway.Wrap(gateway.EConflict, se, or(m.conflict, "a record with this key already exists"))
	case lib.SQLITE_CONSTRAINT_FOREIGNKEY:
		return gateway.Wrap(gateway.ENotFound, se, or(m.notFound, "a parent record does not exist"))
	case lib.SQLITE_CONSTRAINT_CHECK:
		name := ""
		if sub := checkName.FindStringSubmatch(se.Error()); sub != nil {
			name = sub[1]
		}
		msg, _ := migrations.ConstraintMessage(name)
		return gateway.Wrap(gateway.EInvalid, se, or(msg, "invalid value rejected by a CHECK constraint"))
	case lib.SQLITE_CONSTRAINT_NOTNULL, lib.SQLITE_CONSTRAINT_DATATYPE:
		return gateway.Wrap(gateway.EInvalid, se, "invalid value: a required field is missing or has the wrong type")
	default:
		switch code & 0xff { // primary result code
		case lib.SQLITE_BUSY, lib.SQLITE_LOCKED, lib.SQLITE_IOERR, lib.SQLITE_FULL,
			lib.SQLITE_CANTOPEN, lib.SQLITE_READONLY, lib.SQLITE_PROTOCOL:
			return gateway.Wrap(gateway.EUnavailable, se,
				"audit store unavailable: the SQLite database is busy or cannot be written; retry shortly, and check the disk if it persists")
		}
	}
	return nil
}

// isUnavailable reports errors that mean "the database cannot serve now"
// rather than "the request was wrong": closed pools, deadlines, cancellations.
func isUnavailable(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	// database/sql does not export this one.
	return strings.Contains(err.Error(), "sql: database is closed")
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
