package postgres

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
	"github.com/mcpgate/mcpgate/migrations"
)

// classify is sqlcore.Dialect.Classify: a server error's class by its
// SQLSTATE; "" for no specific class.
func classify(err error) (gateway.ErrorCode, string) {
	pe := pq.As(err)
	if pe == nil {
		return "", ""
	}
	switch {
	case pe.Code == lateCode:
		return gateway.EUnavailable, "PostgreSQL answered after the call's deadline; nothing was written, retry shortly"
	case pe.Code == pqerror.UniqueViolation:
		return gateway.EConflict, sqlcore.ConflictMsg
	case pe.Code == pqerror.ForeignKeyViolation:
		return gateway.ENotFound, sqlcore.MissingParentMsg
	case pe.Code == pqerror.CheckViolation:
		if msg, ok := migrations.ConstraintMessage(pe.Constraint); ok {
			return gateway.EInvalid, msg
		}
		return gateway.EInvalid, "invalid value rejected by constraint " + pe.Constraint
	case pe.Code == pqerror.NotNullViolation || pe.Code.Class() == pqerror.ClassDataException:
		return gateway.EInvalid, "invalid value: " + pe.Message
	case pe.Code.Class() == pqerror.ClassConnectionException,
		pe.Code.Class() == pqerror.ClassInsufficientResources,
		pe.Code.Class() == pqerror.ClassOperatorIntervention && pe.Code != pqerror.QueryCanceled:
		return gateway.EUnavailable, "audit store unavailable: PostgreSQL refused the request (" + string(pe.Code) + "); retry shortly"
	}
	return "", ""
}

// unreachable is sqlcore.Dialect.Unreachable: the network errors of a
// connection to a server that went away or never answered.
func unreachable(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.As(err, &ne)
}

// translate is dialect.Translate: every driver error leaves the package as
// a *gateway.Error.
func translate(err error, m sqlcore.Msgs) error { return dialect.Translate(err, m) }

// driverError translates a driver error with no statement-specific messages
// (a failed prepare, a failed delete).
func driverError(err error) error { return dialect.Translate(err, sqlcore.Msgs{}) }
