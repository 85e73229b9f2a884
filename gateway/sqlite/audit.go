package sqlite

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
// kept in UTC to the microsecond (as PostgreSQL keeps it); the caller sets
// RequestID (nothing is read from ctx). Arguments are stored
// only when non-empty. Concurrent calls queue for the one write connection
// instead of failing with SQLITE_BUSY. Errors: EUnavailable when the
// database cannot be written, EInvalid when Arguments is not JSON; on error
// no row exists and the caller must refuse the call (DESIGN.md §1, Fail closed).
func (s *Store) RecordAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	if len(ev.Arguments) > 0 && !json.Valid(ev.Arguments) {
		return errArgumentsNotJSON()
	}
	normalizeEvent(ev)
	stmt, err := s.auditStmt.Get(ctx, s.w, driverError)
	if err != nil {
		return err
	}
	return translate(stmt.QueryRowContext(ctx, auditArgs(ev)...).Scan(&ev.ID), msgs{})
}

// errArgumentsNotJSON refuses an audit event whose Arguments are not JSON
// (PostgreSQL's jsonb column refuses them by itself).
func errArgumentsNotJSON() error {
	return gateway.Errorf(gateway.EInvalid, "audit event arguments are not valid JSON")
}

// auditArgs are the parameters of insertAudit for ev; Arguments only when
// non-empty.
func auditArgs(ev *gateway.AuditEvent) []any {
	var args any
	if len(ev.Arguments) > 0 {
		args = string(ev.Arguments)
	}
	return []any{fmtTime(ev.Time), ev.RequestID, ev.DecisionID, ev.WorkspaceID, ev.TaskID,
		ev.ProfileID, ev.Actor, string(ev.PrincipalKind), ev.TokenFP, ev.Tool, string(ev.Tier), ev.Status,
		ev.ErrorClass, jsonList(ev.ReasonCodes), ev.Bucket, ev.LatencyMicros, ev.ArgumentsHash, args}
}

// insertAudit writes one audit_events row and returns its id.
const insertAudit = `
INSERT INTO audit_events (time, request_id, decision_id, workspace_id, task_id, profile_id, actor,
    principal_kind, token_fingerprint, tool, tier, status, error_class, reason_codes, bucket,
    latency_us, arguments_hash, arguments)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id`

// FinishAudit completes the row ev.ID after dispatch: it sets the final
// Status, ErrorClass, ReasonCodes and LatencyMicros of ev (a call can end
// with a reason of its own, such as dispatch.abandoned) and leaves every other column
// as RecordAudit wrote it. Errors: ENotFound when no row has ev.ID,
// EUnavailable when the database cannot be written.
func (s *Store) FinishAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	const q = `UPDATE audit_events SET status = ?, error_class = ?, latency_us = ?, reason_codes = ? WHERE id = ?`
	res, err := s.w.ExecContext(ctx, q, ev.Status, ev.ErrorClass, ev.LatencyMicros, jsonList(ev.ReasonCodes), ev.ID)
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

// auditRow is an audit_events row as SQLite returns it.
type auditRow struct {
	ID            int64  `db:"id"`
	Time          string `db:"time"`
	RequestID     string `db:"request_id"`
	DecisionID    string `db:"decision_id"`
	WorkspaceID   string `db:"workspace_id"`
	TaskID        string `db:"task_id"`
	ProfileID     string `db:"profile_id"`
	Actor         string `db:"actor"`
	PrincipalKind string `db:"principal_kind"`
	TokenFP       string `db:"token_fingerprint"`
	Tool          string `db:"tool"`
	Tier          string `db:"tier"`
	Status        string `db:"status"`
	ErrorClass    string `db:"error_class"`
	ReasonCodes   []byte `db:"reason_codes"`
	Bucket        string `db:"bucket"`
	LatencyMicros int64  `db:"latency_us"`
	ArgumentsHash string `db:"arguments_hash"`
	Arguments     []byte `db:"arguments"`
}

// event converts the row.
func (r auditRow) event() (gateway.AuditEvent, error) {
	ev := gateway.AuditEvent{ID: r.ID, RequestID: r.RequestID, DecisionID: r.DecisionID,
		WorkspaceID: r.WorkspaceID, TaskID: r.TaskID, ProfileID: r.ProfileID, Actor: r.Actor,
		PrincipalKind: gateway.PrincipalKind(r.PrincipalKind), TokenFP: r.TokenFP, Tool: r.Tool,
		Tier: gateway.Tier(r.Tier), Status: r.Status, ErrorClass: r.ErrorClass, Bucket: r.Bucket,
		LatencyMicros: r.LatencyMicros, ArgumentsHash: r.ArgumentsHash}
	var err error
	if ev.Time, err = parseTime(r.Time); err != nil {
		return ev, err
	}
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
			where = append(where, c.col+" = ?")
		}
	}
	if !f.Before.IsZero() {
		args = append(args, fmtTime(f.Before.Time), f.Before.ID)
		where = append(where, "(time, id) < (?, ?)")
	}
	q := `SELECT ` + auditColumns + ` FROM audit_events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY time DESC, id DESC LIMIT ?`
	args = append(args, auditLimit(f.Limit))
	var rows []auditRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
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
