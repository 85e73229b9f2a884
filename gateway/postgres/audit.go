package postgres

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Listing limits of gateway.AuditFilter.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// RecordAudit inserts ev into audit_events with one INSERT … RETURNING id
// and sets ev.ID. It normalises ev first: a zero Time becomes now, Time is
// kept in UTC to the microsecond (PostgreSQL's precision); the caller sets
// RequestID (nothing is read from ctx). Arguments are stored
// only when non-empty. Errors: EUnavailable when PostgreSQL cannot be
// reached, EInvalid when Arguments is not JSON; on error no row exists and
// the caller must refuse the call (DESIGN.md §1, Fail closed).
func (s *Store) RecordAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	normalizeEvent(ev)
	stmt, err := s.auditStmt.Get(ctx, s.db, driverError)
	if err != nil {
		return err
	}
	return translate(stmt.QueryRowContext(ctx, auditArgs(ev)...).Scan(&ev.ID), msgs{})
}

// auditArgs are the parameters of insertAudit for ev; Arguments only when
// non-empty.
func auditArgs(ev *gateway.AuditEvent) []any {
	var args any
	if len(ev.Arguments) > 0 {
		args = string(ev.Arguments)
	}
	return []any{ev.Time, ev.RequestID, ev.DecisionID, ev.WorkspaceID, ev.TaskID,
		ev.ProfileID, ev.Actor, string(ev.PrincipalKind), ev.TokenFP, ev.Tool, string(ev.Tier), ev.Status,
		ev.ErrorClass, jsonList(ev.ReasonCodes), ev.Bucket, ev.LatencyMicros, ev.ArgumentsHash, args}
}

// auditInsertColumns are the columns auditArgs fills, in its order.
const auditInsertColumns = `time, request_id, decision_id, workspace_id, task_id, profile_id, actor,
    principal_kind, token_fingerprint, tool, tier, status, error_class, reason_codes, bucket,
    latency_us, arguments_hash, arguments`

// auditInsertValues are auditArgs as $1…$18, typed so that they also
// stand in a SELECT list (reserveAndAudit).
const auditInsertValues = `$1::timestamptz, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text,
    $8::text, $9::text, $10::text, $11::text, $12::text, $13::text, $14::jsonb, $15::text,
    $16::bigint, $17::text, $18::jsonb`

// insertAudit writes one audit_events row and returns its id.
const insertAudit = `INSERT INTO audit_events (` + auditInsertColumns + `) VALUES (` + auditInsertValues + `) RETURNING id`

// FinishAudit completes the row ev.ID after dispatch: it sets the final
// Status, ErrorClass, ReasonCodes and LatencyMicros of ev (a call can end
// with a reason of its own, such as dispatch.abandoned) and leaves every other column
// as RecordAudit wrote it. Errors: ENotFound when no row has ev.ID,
// EUnavailable when PostgreSQL cannot be reached.
func (s *Store) FinishAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	const q = `UPDATE audit_events SET status = $2, error_class = $3, latency_us = $4, reason_codes = $5::jsonb WHERE id = $1`
	res, err := s.db.ExecContext(ctx, q, ev.ID, ev.Status, ev.ErrorClass, ev.LatencyMicros, jsonList(ev.ReasonCodes))
	return expectOne(res, err, "audit event "+strconv.FormatInt(ev.ID, 10)+
		" not found; record it with RecordAudit before finishing it")
}

// normalizeEvent fills the time and rounds it to what the column keeps, so
// that ev equals the row read back.
func normalizeEvent(ev *gateway.AuditEvent) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Time = ev.Time.UTC().Truncate(time.Microsecond)
}

// auditColumns are read into auditRow; listed, not *, so that a column a
// later migration adds does not break the scan.
const auditColumns = `id, time, request_id, decision_id, workspace_id, task_id, profile_id, actor,
    principal_kind, token_fingerprint, tool, tier, status, error_class, reason_codes, bucket,
    latency_us, arguments_hash, arguments`

// auditRow is an audit_events row as PostgreSQL returns it.
type auditRow struct {
	ID            int64     `db:"id"`
	Time          time.Time `db:"time"`
	RequestID     string    `db:"request_id"`
	DecisionID    string    `db:"decision_id"`
	WorkspaceID   string    `db:"workspace_id"`
	TaskID        string    `db:"task_id"`
	ProfileID     string    `db:"profile_id"`
	Actor         string    `db:"actor"`
	PrincipalKind string    `db:"principal_kind"`
	TokenFP       string    `db:"token_fingerprint"`
	Tool          string    `db:"tool"`
	Tier          string    `db:"tier"`
	Status        string    `db:"status"`
	ErrorClass    string    `db:"error_class"`
	ReasonCodes   []byte    `db:"reason_codes"`
	Bucket        string    `db:"bucket"`
	LatencyMicros int64     `db:"latency_us"`
	ArgumentsHash string    `db:"arguments_hash"`
	Arguments     []byte    `db:"arguments"`
}

// event converts the row, with Time in UTC.
func (r auditRow) event() (gateway.AuditEvent, error) {
	ev := gateway.AuditEvent{ID: r.ID, Time: r.Time.UTC(), RequestID: r.RequestID, DecisionID: r.DecisionID,
		WorkspaceID: r.WorkspaceID, TaskID: r.TaskID, ProfileID: r.ProfileID, Actor: r.Actor,
		PrincipalKind: gateway.PrincipalKind(r.PrincipalKind), TokenFP: r.TokenFP, Tool: r.Tool,
		Tier: gateway.Tier(r.Tier), Status: r.Status, ErrorClass: r.ErrorClass, Bucket: r.Bucket,
		LatencyMicros: r.LatencyMicros, ArgumentsHash: r.ArgumentsHash}
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
func (s *Store) ListAuditEvents(ctx context.Context, f gateway.AuditFilter) ([]gateway.AuditEvent, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, val string }{
		{"workspace_id", f.WorkspaceID}, {"task_id", f.TaskID}, {"tool", f.Tool}, {"status", f.Status},
	} {
		if c.val != "" {
			args = append(args, c.val)
			where = append(where, c.col+" = $"+strconv.Itoa(len(args)))
		}
	}
	if !f.Before.IsZero() {
		args = append(args, f.Before.Time.UTC(), f.Before.ID)
		where = append(where, "(time, id) < ($"+strconv.Itoa(len(args)-1)+", $"+strconv.Itoa(len(args))+")")
	}
	q := `SELECT ` + auditColumns + ` FROM audit_events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, auditLimit(f.Limit))
	q += ` ORDER BY time DESC, id DESC LIMIT $` + strconv.Itoa(len(args))
	var rows []auditRow
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, translate(err, msgs{})
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
