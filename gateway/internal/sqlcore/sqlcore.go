// Package sqlcore is the one SQL core of the two audit stores
// (gateway/postgres, gateway/sqlite): the audit rows, the reservation, the
// idempotency keys and their plumbing, written once over sqlx, with what
// differs between the databases named in a Dialect (placeholders, how a
// time is written, error translation, the reservation statement). Each
// store embeds a *Core and keeps only what is its own: opening and
// pooling connections, migrations, driver error codes and the statements
// whose SQL differs.
package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
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

// Dialect is what differs between the databases, as data and small hooks
// (in the manner of pressly/goose's database/dialect).
type Dialect struct {
	// Bind is the placeholder style of the driver (sqlx.DOLLAR,
	// sqlx.QUESTION); the core writes its SQL with ? and rebinds it.
	Bind int
	// Time encodes a time for a time column (UTC, to the microsecond).
	Time func(t time.Time) any
	// Translate turns a driver error into a *gateway.Error (unique
	// violation → EConflict, no rows and foreign keys → ENotFound, an
	// unreachable database → EUnavailable, …); *gateway.Error values pass
	// through, nil stays nil.
	Translate func(err error, m Msgs) error
	// CheckJSON makes the core check audit arguments itself, for a
	// database whose column does not refuse text that is not JSON.
	CheckJSON bool
	// CallerQuery loads a caller in one row (Core.LoadCaller): its
	// parameters are the workspace, the acting user, the requested profile
	// and the task; its columns the workspace's id, name, slug, org plan
	// and created_at, then, as JSON or NULL, the member, the requested and
	// the default profile, the seat type, the org plan, the member's and
	// the workspace's overrides, and the task; last a boolean: the
	// requested profile is in deleted_agent_profiles.
	CallerQuery string
	// InsertAudit inserts one audit_events row from AuditArgs (22 ?
	// placeholders in their order) and returns its id.
	InsertAudit string
	// PrepareReserve readies, before a reservation's transaction begins,
	// the statements TakeSlots uses: preparing takes a connection from the
	// pool, which inside the transaction could wait for ever for the one
	// the transaction holds.
	PrepareReserve func(ctx context.Context) error
	// TakeSlots is the dialect's reservation statement: in tx, take one
	// call of each of slots in order and insert the audit row whose
	// AuditArgs are audit, stopping at the first full slot. It returns the
	// row's id, or the full slot (1-based) with its count before this call;
	// the core rolls the transaction back then. With AtomicTakeSlots, tx
	// is nil for a reservation without a claim: TakeSlots then runs alone
	// in autocommit and must itself leave nothing written when a slot is
	// full.
	TakeSlots func(ctx context.Context, tx *sqlx.Tx, audit []any, slots []gateway.Slot) (gateway.ReservationResult, error)
	// AtomicTakeSlots says that TakeSlots is one statement that is all or
	// nothing on its own (PostgreSQL: a statement that raises rolls back
	// entirely), so a reservation without a claim needs no BEGIN and
	// COMMIT of its own: one round trip instead of three.
	AtomicTakeSlots bool
	// GroupReserve makes concurrent reservations share one transaction
	// (group commit, Core.reserveBatch), each in a savepoint of its own:
	// for a database with a single writer (SQLite), where reservations
	// queue for the write connection anyway and each commit costs a WAL
	// write.
	GroupReserve bool
	// ReserveBatch, when set (and GroupReserve is not), makes concurrent
	// reservations without a claim and with slots share one statement and
	// one commit (group commit, Core.reserveGroup): audits[i] are the
	// AuditArgs of reservation i, slots[i] its slots (at least one). Each
	// reservation is all or nothing on its own, as TakeSlots alone, and a
	// later one sees the slots of the earlier ones. It returns one result
	// per reservation, in order: the audit row's id, or the full slot
	// (1-based) with its count before this call, and then nothing of that
	// reservation is written. An error means none of the batch was
	// written (or, for a commit whose outcome is unknown, that all of it
	// may have been).
	ReserveBatch func(ctx context.Context, audits [][]any, slots [][]gateway.Slot) ([]gateway.ReservationResult, error)
	// Deadlocked, when set, reports whether err (as Reserve's transaction
	// returned it) is the database aborting that transaction to break a
	// deadlock. The aborted reservation wrote nothing; Reserve runs it
	// again (at most maxDeadlockAttempts times in all). On PostgreSQL the
	// store's own reservations lock their counter rows in one global order
	// and cannot deadlock each other; this is the backstop for a
	// transaction outside that order.
	Deadlocked func(err error) bool
	// FinishBatch writes the final status, error class, latency and
	// reason codes (FinishArgs) of each of evs, at most MaxFinishBatch of
	// them, by id, in one transaction, and reports for each whether its
	// row exists. An error means none was written, or, for a commit whose
	// outcome is unknown, that they may have been.
	FinishBatch func(ctx context.Context, evs []*gateway.AuditEvent) (found []bool, err error)
}

// Core is the shared part of an audit store. W is the pool writes go
// through (a single connection on SQLite); R the pool for reads that need
// not see the latest write (the same pool as W on PostgreSQL). It is safe
// for concurrent use.
type Core struct {
	W, R *sqlx.DB
	D    Dialect
	// Audit is the prepared Dialect.InsertAudit, on W.
	Audit sqlstmt.Prepared
	load  sqlstmt.Prepared     // Dialect.CallerQuery, on R
	ended sqlstmt.Prepared     // selectSessionEnded, on R
	fin   *finisher            // FinishAudit's group commit
	res   *group[*reserveItem] // Reserve's group commit; nil without Dialect.GroupReserve or ReserveBatch
}

// New returns the core over w and r with dialect d.
func New(w, r *sqlx.DB, d Dialect) *Core {
	c := &Core{W: w, R: r, D: d}
	c.Audit.Query = c.Q(d.InsertAudit)
	c.load.Query = c.Q(d.CallerQuery)
	c.ended.Query = c.Q(selectSessionEnded)
	c.fin = newFinisher(c.finishBatch)
	switch {
	case d.GroupReserve:
		c.res = newReserver(c.reserveBatch)
	case d.ReserveBatch != nil:
		c.res = newReserver(c.reserveGroup)
	}
	return c
}

// Close waits for the FinishAudit calls under way to be written (later
// ones fail with EUnavailable), then releases the core's prepared
// statements (not the pools). Call it before closing the pools.
func (c *Core) Close() error {
	if c.res != nil {
		c.res.close()
	}
	c.fin.close()
	return errors.Join(c.Audit.Close(), c.load.Close(), c.ended.Close())
}

// Q rebinds q, written with ? placeholders, to the dialect's.
func (c *Core) Q(q string) string { return sqlx.Rebind(c.D.Bind, q) }

// Translate translates err with m (Dialect.Translate).
func (c *Core) Translate(err error, m Msgs) error { return c.D.Translate(err, m) }

// DriverError translates err without operation-specific messages.
func (c *Core) DriverError(err error) error { return c.D.Translate(err, Msgs{}) }

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
