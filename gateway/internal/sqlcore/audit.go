package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// Listing limits of gateway.AuditFilter.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// AuditInsertColumns are the columns AuditArgs fills, in its order.
const AuditInsertColumns = `time, request_id, decision_id, workspace_id, task_id, profile_id, actor,
    principal_kind, token_fingerprint, tool, tier, status, error_class, reason_codes, bucket,
    latency_us, arguments_hash, arguments, policy_revision, surface, mode, approval_id, trace_id`

// RecordAudit inserts ev into audit_events, finished (not open: the
// sealer may seal it at once), with one INSERT … RETURNING id and sets
// ev.ID. It normalises ev first: a zero Time becomes now, and
// Time is kept in UTC to the microsecond (PostgreSQL's precision, which
// SQLite keeps too); the caller sets RequestID (nothing is read from ctx).
// Arguments are stored only when non-empty. Errors: EUnavailable when the
// database cannot be reached or written, EInvalid when Arguments is not
// JSON; on error no row exists and the caller must refuse the call (fail
// closed).
func (c *Core) RecordAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	if err := c.CheckEvent(ev); err != nil {
		return err
	}
	stmt, err := c.Record.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return err
	}
	return c.DriverError(stmt.QueryRowContext(ctx, append(c.AuditArgs(ev), ev.Kind)...).Scan(&ev.ID))
}

// RecordEvents is store.AuditLog.RecordEvents: RecordAudit's prepared
// INSERT once per event, in one write transaction.
func (c *Core) RecordEvents(ctx context.Context, evs []*gateway.AuditEvent) error {
	for _, ev := range evs {
		if ev.Kind == gateway.AuditKindToolCall || ev.Kind == "" {
			return gateway.Errorf(gateway.EInvalid, "RecordEvents records the events besides tool calls; a tool call's row goes through Reserve or RecordAudit")
		}
		if err := c.CheckEvent(ev); err != nil {
			return err
		}
	}
	stmt, err := c.Record.Get(ctx, c.W, c.DriverError)
	if err != nil {
		return err
	}
	ids := make([]int64, len(evs))
	err = c.InTx(ctx, func(tx *sqlx.Tx) error {
		st := tx.StmtContext(ctx, stmt)
		for i, ev := range evs {
			if err := st.QueryRowContext(ctx, append(c.AuditArgs(ev), ev.Kind)...).Scan(&ids[i]); err != nil {
				return c.DriverError(err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, ev := range evs {
		ev.ID = ids[i]
	}
	return nil
}

// CheckEvent refuses arguments that are not JSON (where the column does
// not) and a kind that is not one of gateway.AuditKinds, and normalises
// ev's time and kind ("" is a tool call), so that ev equals the row read
// back.
func (c *Core) CheckEvent(ev *gateway.AuditEvent) error {
	if c.D.CheckJSON && len(ev.Arguments) > 0 && !json.Valid(ev.Arguments) {
		return gateway.Errorf(gateway.EInvalid, "audit event arguments are not valid JSON")
	}
	if ev.Kind == "" {
		ev.Kind = gateway.AuditKindToolCall
	}
	if !slices.Contains(gateway.AuditKinds, ev.Kind) {
		return gateway.Errorf(gateway.EInvalid, "audit event kind %q is unknown; use one of %s", ev.Kind, strings.Join(gateway.AuditKinds, ", "))
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Time = ev.Time.UTC().Truncate(time.Microsecond)
	return nil
}

// CheckReservation is CheckEvent for the row of a reservation, which is
// always a tool call, open until FinishAudit: the reservation statements
// write the columns' defaults for kind and open.
func (c *Core) CheckReservation(ev *gateway.AuditEvent) error {
	if err := c.CheckEvent(ev); err != nil {
		return err
	}
	if ev.Kind != gateway.AuditKindToolCall {
		return gateway.Errorf(gateway.EInvalid, "a reservation records a tool call; record a %s event with RecordAudit", ev.Kind)
	}
	return nil
}

// AuditArgs are the parameters of Dialect.InsertAudit for ev, in
// AuditInsertColumns order; Arguments and TraceID only when non-empty
// (NULL otherwise: the chain's canonical form leaves a NULL trace_id out).
// The slice has room for RecordAudit's kind, so that appending it
// allocates nothing.
func (c *Core) AuditArgs(ev *gateway.AuditEvent) []any {
	var args, traceID any
	if len(ev.Arguments) > 0 {
		args = string(ev.Arguments)
	}
	if ev.TraceID != "" {
		traceID = ev.TraceID
	}
	return append(make([]any, 0, AuditColumnCount+1), c.Time(ev.Time), ev.RequestID, ev.DecisionID, ev.WorkspaceID, ev.TaskID,
		ev.ProfileID, ev.Actor, string(ev.PrincipalKind), ev.TokenFP, ev.Tool, string(ev.Tier), ev.Status,
		ev.ErrorClass, JSONList(ev.ReasonCodes), ev.Bucket, ev.LatencyMicros, ev.ArgumentsHash, args, ev.PolicyRevision,
		ev.Surface, ev.Mode, ev.ApprovalID, traceID)
}

// AuditColumnCount is the number of AuditInsertColumns (and of AuditArgs'
// values).
const AuditColumnCount = 23

// FinishArgs are the values a store's FinishBatch writes for ev: status,
// error class, latency, reason codes (JSON) and the policy revision that
// decided the call.
func FinishArgs(ev *gateway.AuditEvent) (status, errorClass string, latencyMicros int64, reasonCodes, policyRevision string) {
	return ev.Status, ev.ErrorClass, ev.LatencyMicros, JSONList(ev.ReasonCodes), ev.PolicyRevision
}

// auditRowColumns are an audit_events row's own columns (no seal), in
// the order auditRow.dest reads them: what the chain's hash covers, and
// what the sealer reads of the rows it seals.
const auditRowColumns = `id, ` + AuditInsertColumns + `, kind, open`

// auditColumns are read into auditRow from audit_events e joined with
// audit_seals s (seq and hash, NULL while the row is not sealed); listed,
// not *, so that a column a later migration adds does not break the scan.
var auditColumns = qualified("e", auditRowColumns) + `, s.seq, s.hash`

// qualified prefixes each of the comma-separated columns cols with
// table and a dot.
func qualified(table, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = table + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// auditRow is an audit_events row as either driver returns it.
type auditRow struct {
	ID            int64          `db:"id"`
	Time          Time           `db:"time"`
	RequestID     string         `db:"request_id"`
	DecisionID    string         `db:"decision_id"`
	WorkspaceID   string         `db:"workspace_id"`
	TaskID        string         `db:"task_id"`
	ProfileID     string         `db:"profile_id"`
	Actor         string         `db:"actor"`
	PrincipalKind string         `db:"principal_kind"`
	TokenFP       string         `db:"token_fingerprint"`
	Tool          string         `db:"tool"`
	Tier          string         `db:"tier"`
	Status        string         `db:"status"`
	ErrorClass    string         `db:"error_class"`
	ReasonCodes   []byte         `db:"reason_codes"`
	Bucket        string         `db:"bucket"`
	LatencyMicros int64          `db:"latency_us"`
	ArgumentsHash string         `db:"arguments_hash"`
	Arguments     []byte         `db:"arguments"`
	PolicyRev     string         `db:"policy_revision"`
	Surface       string         `db:"surface"`
	Mode          string         `db:"mode"`
	ApprovalID    string         `db:"approval_id"`
	TraceID       sql.NullString `db:"trace_id"`
	Kind          string         `db:"kind"`
	Open          bool           `db:"open"`
	Seq           sql.NullInt64  `db:"seq"`
	Hash          sql.NullString `db:"hash"`
}

// dest are the scan destinations of auditRowColumns, then of seq and
// hash when sealed is true (auditColumns): rows.Scan into them directly
// costs the sealer and verify less than sqlx's StructScan, which finds
// the fields by reflection on every row.
func (r *auditRow) dest(sealed bool) []any {
	d := []any{&r.ID, &r.Time, &r.RequestID, &r.DecisionID, &r.WorkspaceID, &r.TaskID, &r.ProfileID, &r.Actor,
		&r.PrincipalKind, &r.TokenFP, &r.Tool, &r.Tier, &r.Status, &r.ErrorClass, &r.ReasonCodes, &r.Bucket,
		&r.LatencyMicros, &r.ArgumentsHash, &r.Arguments, &r.PolicyRev, &r.Surface, &r.Mode, &r.ApprovalID,
		&r.TraceID, &r.Kind, &r.Open, &r.Seq, &r.Hash}
	if !sealed {
		d = d[:len(d)-2]
	}
	return d
}

// event converts the row, with Time in UTC.
func (r auditRow) event() (gateway.AuditEvent, error) {
	ev := gateway.AuditEvent{ID: r.ID, Time: r.Time.Time, RequestID: r.RequestID, DecisionID: r.DecisionID,
		WorkspaceID: r.WorkspaceID, TaskID: r.TaskID, ProfileID: r.ProfileID, Actor: r.Actor,
		PrincipalKind: gateway.PrincipalKind(r.PrincipalKind), TokenFP: r.TokenFP, Tool: r.Tool,
		Tier: gateway.Tier(r.Tier), Status: r.Status, ErrorClass: r.ErrorClass, Bucket: r.Bucket,
		LatencyMicros: r.LatencyMicros, ArgumentsHash: r.ArgumentsHash, PolicyRevision: r.PolicyRev,
		Surface: r.Surface, Mode: r.Mode, ApprovalID: r.ApprovalID, TraceID: r.TraceID.String,
		Kind: r.Kind, Open: r.Open, Seq: r.Seq.Int64, Hash: r.Hash.String}
	if r.Arguments != nil {
		ev.Arguments = json.RawMessage(r.Arguments)
	}
	if err := json.Unmarshal(r.ReasonCodes, &ev.ReasonCodes); err != nil {
		return ev, gateway.Wrap(gateway.EInternal, err, "audit store returned unreadable reason codes")
	}
	return ev, nil
}

// ListAuditEvents returns the events matching f's non-empty fields (and
// older than f.Before when set), newest first (by time, then id), at most
// f.Limit of them: 100 when Limit <= 0, never more than 1000. An unknown
// workspace simply matches nothing.
func (c *Core) ListAuditEvents(ctx context.Context, f gateway.AuditFilter) ([]gateway.AuditEvent, error) {
	var where []string
	var args []any
	for _, col := range []struct{ name, val string }{
		{"workspace_id", f.WorkspaceID}, {"task_id", f.TaskID}, {"tool", f.Tool}, {"status", f.Status},
		{"kind", f.Kind}, {"actor", f.Actor},
	} {
		if col.val != "" {
			args = append(args, col.val)
			where = append(where, "e."+col.name+" = ?")
		}
	}
	if !f.Before.IsZero() {
		args = append(args, c.Time(f.Before.Time), f.Before.ID)
		where = append(where, "(e.time, e.id) < (?, ?)")
	}
	q := `SELECT ` + auditColumns + ` FROM audit_events e LEFT JOIN audit_seals s ON s.id = e.id`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, auditLimit(f.Limit))
	q += ` ORDER BY e.time DESC, e.id DESC LIMIT ?`
	var rows []auditRow
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), args...); err != nil {
		return nil, c.DriverError(err)
	}
	out := make([]gateway.AuditEvent, 0, len(rows))
	for _, r := range rows {
		ev, err := r.event()
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// auditLimit applies AuditFilter's default and cap.
func auditLimit(n int) int {
	switch {
	case n <= 0:
		return defaultAuditLimit
	case n > maxAuditLimit:
		return maxAuditLimit
	}
	return n
}
