package config

import (
	"fmt"
	"strings"
)

// DefaultDatabaseURL is MCPGATE_DATABASE_URL when unset: the embedded
// store in mcpgate.db of the current folder.
const DefaultDatabaseURL = "sqlite:mcpgate.db"

// sqliteForms is what a refused sqlite URL is told to look like.
const sqliteForms = "use sqlite:PATH, e.g. sqlite:mcpgate.db or sqlite:///var/lib/mcpgate/mcpgate.db"

// SQLitePath returns the file an embedded-store URL names, and ok true
// when url is one (it starts "sqlite:"); a postgres:// URL, or anything
// else, gives "", false, nil. Every place that opens or names the SQLite
// file reads it through here, so the forms mean the same everywhere:
//
//   - sqlite:PATH is PATH, relative to the current folder or absolute
//     (sqlite:mcpgate.db, sqlite:/var/lib/mcpgate/mcpgate.db), and
//     sqlite::memory: or sqlite:file:… are passed to SQLite as they are;
//   - sqlite:///ABSPATH is the absolute file /ABSPATH, as in the URL form
//     other tools (SQLAlchemy, dbmate) give SQLite.
//
// Errors: sqlite://HOST… (a URL with an authority: "sqlite://mcpgate.db"
// would otherwise be read as the file /mcpgate.db at the filesystem root)
// and a URL that names no file are refused, saying which forms to use.
func SQLitePath(url string) (path string, ok bool, err error) {
	rest, ok := strings.CutPrefix(url, "sqlite:")
	if !ok {
		return "", false, nil
	}
	if authority, isURL := strings.CutPrefix(rest, "//"); isURL {
		if !strings.HasPrefix(authority, "/") {
			return "", true, fmt.Errorf("%q names a host (%q), and an SQLite file has none; %s", url, strings.SplitN(authority, "/", 2)[0], sqliteForms)
		}
		rest = authority
	}
	if rest == "" || rest == "/" {
		return "", true, fmt.Errorf("%q names no SQLite file; %s", url, sqliteForms)
	}
	return rest, true, nil
}
