package sqlite

import "github.com/mcpgate/mcpgate/gateway/internal/sqlstmt"

// prepared is a hot-path statement of this store (see sqlstmt.Prepared).
type prepared = sqlstmt.Prepared
