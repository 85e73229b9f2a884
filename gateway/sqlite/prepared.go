package sqlite

import "github.com/mcpgate/mcpgate/gateway/internal/sqlstmt"

// prepared is a hot-path statement of this store (see sqlstmt.Prepared).
type prepared = sqlstmt.Prepared

// driverError translates a driver error with no statement-specific messages
// (a failed prepare, a failed delete).
func driverError(err error) error { return translate(err, msgs{}) }
