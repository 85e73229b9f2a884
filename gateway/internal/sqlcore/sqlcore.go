// Package sqlcore is the one SQL core of the two audit stores
// (gateway/postgres, gateway/sqlite): the audit rows, the caller, the
// admin reads and writes, API tokens, rate-limit counters, sessions,
// approvals, idempotency keys and error translation, written once over
// sqlx, with what differs between the databases named in a Dialect, a
// value of data: SQL literals (placeholders, time format and now, booleans,
// JSON functions, row locks), the classifiers of driver errors and the
// few statements that differ. Nothing here calls back into a store. Each
// store embeds a *Core and keeps only what is its own: opening and
// pooling connections, migrations, and its Reserve and FinishAudit, which
// compose the core's helpers (ReserveTx, ReserveSavepoints, NewReserver,
// NewFinisher) with the store's own statements.
package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlstmt"
)

// Msgs holds what one operation says to people when the database refuses
// it: NotFound for no rows or a missing parent (foreign key), Conflict for
// a unique violation. Empty fields fall back to the dialect's generic
// messages.
type Msgs struct {
	NotFound string
	Conflict string
}

// Dialect is what differs between the databases, as data (in the manner
// of pressly/goose's database/dialect): SQL literals the shared
// statements are written with, the classifiers of the driver's errors,
// and the few statements that really differ. Nothing in it calls back
// into a store: what differs beyond statements (the reservation and the
// batch that finishes audit rows) is each store's own Reserve and
// FinishAudit, composed of the core's helpers (ReserveTx,
// ReserveSavepoints, NewReserver, NewFinisher).
type Dialect struct {
	// Bind is the placeholder style of the driver (sqlx.DOLLAR,
	// sqlx.QUESTION); the core writes its SQL with ? and rebinds it.
	Bind int
	// TimeText says that time columns are text in TimeLayout (SQLite:
	// text order is time order); otherwise times go to the driver as
	// time.Time in UTC.
	TimeText bool
	// Now is the SQL of the current time in a write (PostgreSQL's now(),
	// the transaction's start on the server), or "" to pass the gateway's
	// time (Now) as a parameter instead: SQLite has no function that
	// writes TimeLayout.
	Now string
	// True and False are the boolean literals (true/false, 1/0).
	True, False string
	// JSONEach is a table (alias e, columns key and value) of the members
	// of the JSON object given as one ? parameter; JSONBool reads e.value
	// as the column's boolean.
	JSONEach, JSONBool string
	// LockRow ends a SELECT of one row inside a write transaction so that
	// the row stays as read until the commit (PostgreSQL: FOR NO KEY
	// UPDATE, which does not block inserts of children); "" where the
	// transaction holds the database's only write lock (SQLite's BEGIN
	// IMMEDIATE).
	LockRow string
	// Later is the later of a nullable time column, %s, and a ? parameter
	// (a NULL column gives the parameter): TouchAPIToken never moves
	// last_used_at backwards.
	Later string
	// CheckJSON makes the core check audit arguments itself, for a
	// database whose column does not refuse text that is not JSON.
	CheckJSON bool

	// Classify names the class of a driver error that the core does not
	// know itself (no rows, the *gateway.Error values, lost connections):
	// its code (EConflict for a unique violation, ENotFound for a foreign
	// key, EInvalid for a CHECK, NOT NULL or data error, EUnavailable for a
	// busy or refusing server) and its message for people; "" when the
	// error has no class of the dialect's. An operation's Msgs replace the
	// messages of EConflict and ENotFound.
	Classify func(err error) (gateway.ErrorCode, string)
	// Unreachable reports the driver's own ways of saying that the
	// database cannot be reached now (network errors), besides the ones
	// of database/sql and the context the core knows; nil for none.
	Unreachable func(err error) bool
	// Unanswered is the message of EUnavailable for a database that did
	// not answer (a lost connection, a deadline).
	Unanswered string

	// CallerQuery loads a caller in one row (Core.LoadCaller): its
	// parameters are the workspace, the acting user, the requested profile
	// and the task; its columns the workspace's id, name, slug, org plan
	// and created_at, then, as JSON or NULL, the member, the requested and
	// the default profile, the seat type, the org plan, the member's and
	// the workspace's overrides, and the task; then a boolean: the
	// requested profile is in deleted_agent_profiles; last the
	// workspace's flow_rules (a boolean).
	CallerQuery string
	// InsertAudit inserts one audit_events row from AuditArgs
	// (AuditColumnCount placeholders in their order), open (a
	// reservation's), and returns its id. RecordAudit is the same for a
	// finished row, with one more placeholder for its kind: open false.
	InsertAudit, RecordAudit string
	// SealLease is a SELECT of one boolean that runs first in a sealing
	// transaction and tells whether this process holds the sealing lease
	// for it (PostgreSQL: a transaction-scoped advisory lock, tried, not
	// waited for, and a bound on the transaction's idle time, so that a
	// replica that hangs while sealing loses the lease); "" where one
	// process serves the database (SQLite).
	SealLease string
	// SealRows inserts the audit_seals rows of one sealing round from
	// three ? parameters, array literals of the same length: the seqs,
	// the ids and the hashes ({1,2}, {7,9}, {ab…,cd…}); unused with
	// OneWriter.
	SealRows string
	// SealVacuum, when set, is run outside any transaction, at most once
	// every SealVacuumEvery, by a sealer whose round sealed rows: it
	// vacuums audit_unsealed (PostgreSQL: VACUUM; "" where a deleted row
	// leaves nothing behind for the sealer's reads to step over, as in
	// SQLite). SealVacuumAllowed, run once before the first, is a SELECT
	// of one boolean: whether this session's role may vacuum the table.
	SealVacuum, SealVacuumAllowed string
	// OneWriter is true where the sealing transaction holds the
	// database's only writer (SQLite): a round then reads its rows in one
	// statement, and claims them (deletes their audit_unsealed entries)
	// as it writes their seals, both with bound values. False
	// (PostgreSQL): a round claims its rows first (DELETE … RETURNING),
	// which waits for a finish under way on one of them, and writes the
	// seals with SealRows.
	OneWriter bool
	// DeleteExpiredCounts deletes the rate-limit counters whose expires_at
	// is at or before ? (Core.DeleteExpiredRateCounts);
	// DeleteEndedTaskCounts those of tasks in a terminal state whose
	// updated_at is at or before ? (Core.DeleteEndedTaskCounts). Both
	// lock the rows they delete as the dialect's reservation does.
	DeleteExpiredCounts, DeleteEndedTaskCounts string
}

// Core is the shared part of an audit store. W is the pool writes go
// through (a single connection on SQLite); R the pool for reads that need
// not see the latest write (the same pool as W on PostgreSQL). It is safe
// for concurrent use.
type Core struct {
	W, R *sqlx.DB
	D    Dialect
	// Audit is the prepared Dialect.InsertAudit, Record
	// Dialect.RecordAudit, on W.
	Audit, Record sqlstmt.Prepared
	// Add is the prepared addCount (AddRateCount), on W.
	Add   sqlstmt.Prepared
	load  sqlstmt.Prepared // Dialect.CallerQuery, on R
	ended sqlstmt.Prepared // selectSessionEnded, on R
	// The flow rules' statements, prepared as the hot path's others are:
	// with the rule set on, every call reads its session (flowRead, on R)
	// and locks it in its reservation (flowLock, and flowSave when the
	// call adds to it, on W).
	flowRead, flowLock, flowSave sqlstmt.Prepared
	lit                          *strings.Replacer // the dialect's literals (sql)
	// seal is the sealer's memory of the open rows it has seen (SealAudit).
	seal sealState
}

// New returns the core over w and r with dialect d.
func New(w, r *sqlx.DB, d Dialect) *Core {
	c := &Core{W: w, R: r, D: d}
	c.Audit.Query = c.Q(d.InsertAudit)
	c.Record.Query = c.Q(d.RecordAudit)
	c.Add.Query = c.Q(addCount)
	c.load.Query = c.Q(d.CallerQuery)
	c.ended.Query = c.Q(selectSessionEnded)
	c.flowRead.Query = c.Q(selectFlow)
	c.flowLock.Query = c.Q(lockFlow)
	c.flowSave.Query = c.Q(saveFlow)
	c.lit = strings.NewReplacer("{true}", d.True, "{false}", d.False, "{lock}", d.LockRow,
		"{each}", d.JSONEach, "{bool}", d.JSONBool)
	return c
}

// Close releases the core's prepared statements (not the pools). Call it
// after closing the store's group commits (Group.Close), which wait for
// the writes under way, and before closing the pools.
func (c *Core) Close() error {
	return errors.Join(c.Audit.Close(), c.Record.Close(), c.Add.Close(), c.load.Close(), c.ended.Close(),
		c.flowRead.Close(), c.flowLock.Close(), c.flowSave.Close())
}

// Q rebinds q, written with ? placeholders, to the dialect's.
func (c *Core) Q(q string) string { return sqlx.Rebind(c.D.Bind, q) }

// Translate translates err with m (Dialect.Translate).
func (c *Core) Translate(err error, m Msgs) error { return c.D.Translate(err, m) }

// DriverError translates err without operation-specific messages.
func (c *Core) DriverError(err error) error { return c.D.Translate(err, Msgs{}) }

// Time encodes t for a time column of the dialect (Dialect.TimeText).
func (c *Core) Time(t time.Time) any { return c.D.Time(t) }

// TimeLayout is how SQLite stores times (Dialect.TimeText): UTC with six
// fractional digits, so that text order is time order (see
// migrations/sqlite/00001_init.sql).
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Time encodes t for a time column: UTC, as text in TimeLayout when
// d.TimeText.
func (d *Dialect) Time(t time.Time) any {
	if d.TimeText {
		return t.UTC().Format(TimeLayout)
	}
	return t.UTC()
}

// now is the SQL of the current time in a write (Dialect.Now) and the
// arguments it takes: the dialect's expression and none, or a ? and the
// gateway's Now.
func (c *Core) now() (string, []any) {
	if c.D.Now != "" {
		return c.D.Now, nil
	}
	return "?", []any{c.Time(Now())}
}

// sql is q with the dialect's literals in place of {true}, {false},
// {lock} (Dialect.LockRow), {each} and {bool} (Dialect.JSONEach,
// JSONBool), rebound to the dialect's placeholders.
func (c *Core) sql(q string) string {
	return c.Q(c.lit.Replace(q))
}

// InTx runs fn in a write transaction on W, committing when it returns
// nil and rolling back otherwise, so that a failed admin write changes
// nothing.
func (c *Core) InTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := c.W.BeginTxx(ctx, nil)
	if err != nil {
		return c.DriverError(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return c.DriverError(tx.Commit())
}

// Now is the current time as the stores keep it: UTC, to the microsecond.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Time is a time column as either driver returns it: a time.Time
// (lib/pq) or RFC 3339 text (SQLite). Scanned values are in UTC.
type Time struct{ time.Time }

// Scan implements sql.Scanner.
func (t *Time) Scan(v any) error {
	switch v := v.(type) {
	case time.Time:
		t.Time = v.UTC()
		return nil
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	}
	return fmt.Errorf("sqlcore: cannot read %T as a time", v)
}

func (t *Time) parse(s string) error {
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return gateway.Wrap(gateway.EInternal, err, "audit store returned an unreadable time")
	}
	t.Time = p.UTC()
	return nil
}

// NullTime is a nullable Time; Valid is false for NULL.
type NullTime struct {
	Time
	Valid bool
}

// Scan implements sql.Scanner.
func (t *NullTime) Scan(v any) error {
	if v == nil {
		t.Time, t.Valid = Time{}, false
		return nil
	}
	t.Valid = true
	return t.Time.Scan(v)
}

// ExpectOne translates err (ENotFound with notFound for a missing parent),
// and reports ENotFound with notFound when the statement changed no row.
func (c *Core) ExpectOne(res sql.Result, err error, notFound string) error {
	if err != nil {
		return c.Translate(err, Msgs{NotFound: notFound})
	}
	n, err := res.RowsAffected()
	if err != nil {
		return c.DriverError(err)
	}
	if n == 0 {
		return gateway.Errorf(gateway.ENotFound, "%s", notFound)
	}
	return nil
}

// Delete runs the DELETE q (with ? placeholders) on W and returns how many
// rows it removed.
func (c *Core) Delete(ctx context.Context, q string, args ...any) (int64, error) {
	return sqlstmt.Delete(ctx, c.W, c.DriverError, c.Q(q), args...)
}

// JSONList encodes a list for a JSON column; nil becomes [].
func JSONList(v []string) string {
	if v == nil {
		return "[]"
	}
	return mustJSON(v)
}

// NullableJSONList keeps the nil/empty distinction of script_allowlist:
// nil → SQL NULL (no restriction), empty → [] (no script).
func NullableJSONList(v []string) any {
	if v == nil {
		return nil
	}
	return mustJSON(v)
}

// JSONObject encodes permissions for a JSON column; nil becomes {}.
func JSONObject(p gateway.Permissions) string {
	if p == nil {
		return "{}"
	}
	return mustJSON(p)
}

// mustJSON marshals values that cannot fail (strings, bools, maps of them).
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("sqlcore: marshal: " + err.Error())
	}
	return string(b)
}

// Messages for missing records: what is missing and how to create it
// through the admin API.

// WorkspaceNotFound is the message for an unknown workspace.
func WorkspaceNotFound(ws string) string {
	return fmt.Sprintf("workspace %s not found; create it with PUT /admin/v1/workspaces/%s", ws, ws)
}

// MemberNotFound is the message for an unknown member of a workspace.
func MemberNotFound(ws, user string) string {
	return fmt.Sprintf("member %s of workspace %s not found; add it with PUT /admin/v1/workspaces/%s/members/%s",
		user, ws, ws, user)
}

// ProfileNotFound is the message for an unknown profile of a workspace.
func ProfileNotFound(ws, profile string) string {
	return fmt.Sprintf("profile %s not found in workspace %s; create it with PUT /admin/v1/workspaces/%s/profiles/%s",
		profile, ws, ws, profile)
}

// TokenNotFound is the message for an unknown API token fingerprint.
func TokenNotFound(fp string) string {
	return fmt.Sprintf("api token %s not found; list a workspace's tokens and their fingerprints with GET /admin/v1/workspaces/{ws}/api-tokens or mcpgate token list --workspace WS", fp)
}
