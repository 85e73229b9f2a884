package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/migrations"
)

// msgs holds what one operation says to people when the database refuses
// it: notFound for no rows or a missing parent (foreign key), conflict for
// a unique violation. Empty fields fall back to generic messages.
type msgs struct {
	notFound string
	conflict string
}

// translate turns a driver error into a *gateway.Error before it leaves the
// package (one error type, translated where the driver error arises): no rows and foreign-key
// violations → ENotFound, unique violations → EConflict, CHECK and data
// errors → EInvalid, lost connections → EUnavailable, the rest → EInternal.
// *gateway.Error values pass through unchanged; nil stays nil.
func translate(err error, m msgs) error {
	if err == nil {
		return nil
	}
	var ge *gateway.Error
	if errors.As(err, &ge) {
		return err
	}
	if isNoRows(err) {
		return gateway.Wrap(gateway.ENotFound, err, or(m.notFound, "record not found"))
	}
	if pe := pq.As(err); pe != nil {
		if e := translatePQ(pe, m); e != nil {
			return e
		}
	}
	if isUnavailable(err) {
		return gateway.Wrap(gateway.EUnavailable, err,
			"audit store unavailable: PostgreSQL did not answer; retry shortly, and check the database if it persists")
	}
	return gateway.Wrap(gateway.EInternal, err, "audit store error; the gateway logged the cause")
}

// translatePQ maps a server error by SQLSTATE; nil means "no specific class".
func translatePQ(pe *pq.Error, m msgs) error {
	switch {
	case pe.Code == lateCode:
		return gateway.Wrap(gateway.EUnavailable, pe, "PostgreSQL answered after the call's deadline; nothing was written, retry shortly")
	case pe.Code == pqerror.UniqueViolation:
		return gateway.Wrap(gateway.EConflict, pe, or(m.conflict, "a record with this key already exists"))
	case pe.Code == pqerror.ForeignKeyViolation:
		return gateway.Wrap(gateway.ENotFound, pe, or(m.notFound, "a parent record does not exist"))
	case pe.Code == pqerror.CheckViolation:
		msg, _ := migrations.ConstraintMessage(pe.Constraint)
		return gateway.Wrap(gateway.EInvalid, pe, or(msg, "invalid value rejected by constraint "+pe.Constraint))
	case pe.Code == pqerror.NotNullViolation || pe.Code.Class() == pqerror.ClassDataException:
		return gateway.Wrap(gateway.EInvalid, pe, "invalid value: "+pe.Message)
	case pe.Code.Class() == pqerror.ClassConnectionException,
		pe.Code.Class() == pqerror.ClassInsufficientResources,
		pe.Code.Class() == pqerror.ClassOperatorIntervention && pe.Code != pqerror.QueryCanceled:
		return gateway.Wrap(gateway.EUnavailable, pe,
			"audit store unavailable: PostgreSQL refused the request ("+string(pe.Code)+"); retry shortly")
	}
	return nil
}

// isUnavailable reports errors that mean "the database cannot be reached
// now" rather than "the request was wrong": broken or closed connections,
// network errors, deadlines and cancellations.
func isUnavailable(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.As(err, &ne):
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
