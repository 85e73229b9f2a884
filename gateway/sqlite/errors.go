package sqlite

import (
	"errors"
	"regexp"

	"modernc.org/sqlite"
	lib "modernc.org/sqlite/lib"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
	"github.com/mcpgate/mcpgate/migrations"
)

// checkName extracts the constraint name from SQLite's CHECK error text.
var checkName = regexp.MustCompile(`CHECK constraint failed: (\w+)`)

// classify is sqlcore.Dialect.Classify: an SQLite result code's class; ""
// for no specific class. SQLite's foreign-key errors do not name the
// parent, so the operation's sqlcore.Msgs must.
func classify(err error) (gateway.ErrorCode, string) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return "", ""
	}
	switch code := se.Code(); code {
	case lib.SQLITE_CONSTRAINT_UNIQUE, lib.SQLITE_CONSTRAINT_PRIMARYKEY:
		return gateway.EConflict, sqlcore.ConflictMsg
	case lib.SQLITE_CONSTRAINT_FOREIGNKEY:
		return gateway.ENotFound, sqlcore.MissingParentMsg
	case lib.SQLITE_CONSTRAINT_CHECK:
		name := ""
		if sub := checkName.FindStringSubmatch(se.Error()); sub != nil {
			name = sub[1]
		}
		if msg, ok := migrations.ConstraintMessage(name); ok {
			return gateway.EInvalid, msg
		}
		return gateway.EInvalid, "invalid value rejected by a CHECK constraint"
	case lib.SQLITE_CONSTRAINT_NOTNULL, lib.SQLITE_CONSTRAINT_DATATYPE:
		return gateway.EInvalid, "invalid value: a required field is missing or has the wrong type"
	default:
		switch code & 0xff { // primary result code
		case lib.SQLITE_BUSY, lib.SQLITE_LOCKED, lib.SQLITE_IOERR, lib.SQLITE_FULL,
			lib.SQLITE_CANTOPEN, lib.SQLITE_READONLY, lib.SQLITE_PROTOCOL:
			return gateway.EUnavailable,
				"audit store unavailable: the SQLite database is busy or cannot be written; retry shortly, and check the disk if it persists"
		}
	}
	return "", ""
}

// translate is dialect.Translate: every driver error leaves the package as
// a *gateway.Error.
func translate(err error, m sqlcore.Msgs) error { return dialect.Translate(err, m) }

// driverError translates a driver error with no statement-specific messages
// (a failed prepare, a failed delete).
func driverError(err error) error { return dialect.Translate(err, sqlcore.Msgs{}) }
