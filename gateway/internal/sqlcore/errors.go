package sqlcore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
)

// Translate turns a driver error into a *gateway.Error before it leaves
// the store (one error type, translated where the driver error arises):
// no rows → ENotFound, then the dialect's classes (Classify: unique
// violations → EConflict, foreign keys → ENotFound, CHECK and data errors
// → EInvalid, a busy or refusing server → EUnavailable), lost connections,
// deadlines and cancellations → EUnavailable, the rest → EInternal. m
// words ENotFound and EConflict for the operation. *gateway.Error values
// pass through unchanged; nil stays nil.
func (d *Dialect) Translate(err error, m Msgs) error {
	if err == nil {
		return nil
	}
	var ge *gateway.Error
	if errors.As(err, &ge) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return gateway.Wrap(gateway.ENotFound, err, or(m.NotFound, "record not found"))
	}
	if code, msg := d.Classify(err); code != "" {
		switch code {
		case gateway.EConflict:
			msg = or(m.Conflict, msg)
		case gateway.ENotFound:
			msg = or(m.NotFound, msg)
		}
		return gateway.Wrap(code, err, msg)
	}
	if d.unavailable(err) {
		return gateway.Wrap(gateway.EUnavailable, err, d.Unanswered)
	}
	return gateway.Wrap(gateway.EInternal, err, "audit store error; the gateway logged the cause")
}

// unavailable reports errors that mean "the database cannot serve now"
// rather than "the request was wrong": broken or closed connections,
// deadlines, cancellations, and the dialect's network errors.
func (d *Dialect) unavailable(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		(d.Unreachable != nil && d.Unreachable(err)) {
		return true
	}
	// database/sql does not export this one.
	return strings.Contains(err.Error(), "sql: database is closed")
}

// Generic messages of the classes Dialect.Classify names, for an
// operation without Msgs of its own.
const (
	// ConflictMsg is EConflict's message for a unique violation.
	ConflictMsg = "a record with this key already exists"
	// MissingParentMsg is ENotFound's message for a foreign-key violation.
	MissingParentMsg = "a parent record does not exist"
)

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
