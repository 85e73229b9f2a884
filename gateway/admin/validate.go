package admin

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/mcpgate/mcpgate/gateway"
)

// Bounds on admin input. They keep one request's work and one row's size
// small; real values are far below them.
const (
	maxTextRunes    = 200  // names and labels
	maxListEntries  = 500  // allowlist, script_allowlist
	maxPermissions  = 1000 // keys in one permission map
	maxPermKeyBytes = 128  // one permission key
	maxLimit        = 1_000_000
)

var (
	// idPattern is the shape of every id in a path (docs/http.md).
	idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	// slugPattern is a URL-safe workspace slug.
	slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	// permKeyPattern is a permission key such as "workspace.budget.view".
	permKeyPattern = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_*]+)*$`)
	// fingerprintPattern is Fingerprint's output: 16 lower-case hex digits.
	fingerprintPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)
	// toolPattern is a tool name filter for audit events.
	toolPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,127}$`)
)

// memberRoles are the roles a member may hold (gateway.Role*).
var memberRoles = []string{gateway.RoleOwner, gateway.RoleAdmin, gateway.RoleMember, gateway.RoleViewer}

// taskStatuses are the statuses PUT .../tasks/{task} accepts.
var taskStatuses = []string{gateway.TaskRunning, gateway.TaskCompleted, gateway.TaskFailed, gateway.TaskCancelled}

// pathIDs returns the named path variables, each checked against
// idPattern; what names the id in the message (e.g. "workspace id").
func pathIDs(r *http.Request, names ...string) ([]string, error) {
	vars := mux.Vars(r)
	out := make([]string, len(names))
	for i, name := range names {
		if err := checkID(idLabel(name), vars[name]); err != nil {
			return nil, err
		}
		out[i] = vars[name]
	}
	return out, nil
}

func idLabel(name string) string {
	switch name {
	case "ws":
		return "workspace id"
	case "user":
		return "user id"
	case "profile":
		return "profile id"
	case "task":
		return "task id"
	default:
		return name
	}
}

func checkID(what, v string) error {
	if !idPattern.MatchString(v) {
		return invalid("%s %q is not valid; use 1-128 characters from A-Z a-z 0-9 . _ : - starting with a letter or digit", what, clip(v))
	}
	return nil
}

// checkText requires a non-blank, printable string of at most maxTextRunes,
// without Unicode format characters (category Cf: the bidi controls such
// as U+202E and U+2066, zero-width characters such as U+200B, tag
// characters U+E0000–U+E007F): they are invisible or reorder what is
// shown, so a name could read as another in the console and the audit.
func checkText(field, v string) error {
	switch {
	case strings.TrimSpace(v) == "":
		return invalid("field %q is required; send a non-empty string", field)
	case utf8.RuneCountInString(v) > maxTextRunes:
		return invalid("field %q is longer than %d characters", field, maxTextRunes)
	case strings.ContainsFunc(v, unicode.IsControl):
		return invalid("field %q contains control characters; send plain text", field)
	}
	if i := strings.IndexFunc(v, isFormatRune); i >= 0 {
		r, _ := utf8.DecodeRuneInString(v[i:])
		return invalid("field %q contains the invisible format or bidirectional control character U+%04X at byte %d; names must show what they say — remove it and send plain text", field, r, i)
	}
	return nil
}

// isFormatRune reports a Unicode format character (Cf), which includes
// every bidi control (U+061C, U+200E–U+200F, U+202A–U+202E,
// U+2066–U+2069) and the tag block.
func isFormatRune(r rune) bool { return unicode.Is(unicode.Cf, r) }

func checkEnum(field, v string, allowed []string) error {
	if !slices.Contains(allowed, v) {
		if v == "" {
			return invalid("field %q is required; use one of %s", field, strings.Join(allowed, ", "))
		}
		return invalid("field %q is %q; use one of %s", field, clip(v), strings.Join(allowed, ", "))
	}
	return nil
}

// checkPermissions validates the keys of a permission map.
func checkPermissions(field string, p gateway.Permissions) error {
	if len(p) > maxPermissions {
		return invalid("%s has %d keys; at most %d are accepted", field, len(p), maxPermissions)
	}
	for key := range p {
		if len(key) > maxPermKeyBytes || !permKeyPattern.MatchString(key) {
			return invalid("%s key %q is not a permission key; use dot-separated lower-case words such as \"workspace.budget.view\"", field, clip(key))
		}
	}
	return nil
}

// checkEntries validates a list of allowlist-like entries: non-empty, no
// spaces, bounded; grant, when set, vets each entry.
func checkEntries(field string, entries []string, grant func(string) error) error {
	if len(entries) > maxListEntries {
		return invalid("field %q has %d entries; at most %d are accepted", field, len(entries), maxListEntries)
	}
	for i, e := range entries {
		if e == "" || len(e) > 128 || strings.ContainsFunc(e, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
			return invalid("field %q entry %d (%q) must be a non-empty string of at most 128 characters without spaces", field, i, clip(e))
		}
		if grant == nil {
			continue
		}
		if err := grant(e); err != nil {
			return invalid("field %q entry %q: %s", field, clip(e), err.Error())
		}
	}
	return nil
}

// checkLimit validates an optional positive limit (nil keeps the default).
func checkLimit(field string, v *int) error {
	if v != nil && (*v < 1 || *v > maxLimit) {
		return invalid("field %q is %d; use a whole number from 1 to %d, or null for the default", field, *v, maxLimit)
	}
	return nil
}
