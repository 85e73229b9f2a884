package sqlcore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// approvalColumns are read into approvalRow.
const approvalColumns = `id, workspace_id, principal_kind, subject, task_id, tool, arguments_hash, policy_revision,
because, status, created_at, expires_at, decided_by, decided_at, reason, used_at, arguments`

// approvalRow is an approvals row as either driver returns it.
type approvalRow struct {
	ID             string   `db:"id"`
	WorkspaceID    string   `db:"workspace_id"`
	PrincipalKind  string   `db:"principal_kind"`
	Subject        string   `db:"subject"`
	TaskID         string   `db:"task_id"`
	Tool           string   `db:"tool"`
	ArgumentsHash  string   `db:"arguments_hash"`
	PolicyRevision string   `db:"policy_revision"`
	Because        []byte   `db:"because"`
	Status         string   `db:"status"`
	CreatedAt      Time     `db:"created_at"`
	ExpiresAt      Time     `db:"expires_at"`
	DecidedBy      string   `db:"decided_by"`
	DecidedAt      NullTime `db:"decided_at"`
	Reason         string   `db:"reason"`
	UsedAt         NullTime `db:"used_at"`
	Arguments      string   `db:"arguments"`
}

func (r approvalRow) approval() (*approvals.Approval, error) {
	a := &approvals.Approval{ID: r.ID, WorkspaceID: r.WorkspaceID, PrincipalKind: gateway.PrincipalKind(r.PrincipalKind),
		Subject: r.Subject, TaskID: r.TaskID, Tool: r.Tool, ArgumentsHash: r.ArgumentsHash, PolicyRevision: r.PolicyRevision,
		Status: r.Status, CreatedAt: r.CreatedAt.Time, ExpiresAt: r.ExpiresAt.Time, DecidedBy: r.DecidedBy, Reason: r.Reason,
		Because: []string{}}
	if r.Arguments != "" {
		a.Arguments = json.RawMessage(r.Arguments)
	}
	if r.DecidedAt.Valid {
		a.DecidedAt = &r.DecidedAt.Time.Time
	}
	if r.UsedAt.Valid {
		a.UsedAt = &r.UsedAt.Time.Time
	}
	if err := json.Unmarshal(r.Because, &a.Because); err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, "audit store returned an unreadable approval")
	}
	return a, nil
}

// approvalNotFound is the message of an unknown approval id.
func approvalNotFound(id string) string {
	return fmt.Sprintf("approval %q not found; GET /admin/v1/approvals lists the approvals", id)
}

// CreateApproval inserts a, pending, with its times and canonical
// arguments as given (UTC, to the microsecond). ENotFound when its workspace does not exist, EConflict
// when its id is taken.
func (c *Core) CreateApproval(ctx context.Context, a *approvals.Approval) error {
	const q = `INSERT INTO approvals (id, workspace_id, principal_kind, subject, task_id, tool, arguments_hash,
policy_revision, because, status, created_at, expires_at, arguments) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	_, err := c.W.ExecContext(ctx, c.Q(q), a.ID, a.WorkspaceID, string(a.PrincipalKind), a.Subject, a.TaskID, a.Tool,
		a.ArgumentsHash, a.PolicyRevision, JSONList(a.Because), approvals.StatusPending,
		c.Time(a.CreatedAt), c.Time(a.ExpiresAt), string(a.Arguments))
	return c.Translate(err, Msgs{NotFound: WorkspaceNotFound(a.WorkspaceID),
		Conflict: fmt.Sprintf("approval id %q is taken", a.ID)})
}

// Approval returns the approval id as stored; ENotFound when there is none.
func (c *Core) Approval(ctx context.Context, id string) (*approvals.Approval, error) {
	var r approvalRow
	err := c.R.GetContext(ctx, &r, c.Q(`SELECT `+approvalColumns+` FROM approvals WHERE id = ?`), id)
	if err != nil {
		return nil, c.Translate(err, Msgs{NotFound: approvalNotFound(id)})
	}
	return r.approval()
}

// OpenApproval returns the newest approval of k that can still let its call
// run at now: pending or approved (not yet used), and not expired.
// ENotFound when k has none, so the call needs a new one.
func (c *Core) OpenApproval(ctx context.Context, k approvals.Key, now time.Time) (*approvals.Approval, error) {
	const q = `SELECT ` + approvalColumns + ` FROM approvals
WHERE workspace_id = ? AND subject = ? AND tool = ? AND arguments_hash = ? AND principal_kind = ? AND policy_revision = ?
  AND status IN ('pending', 'approved') AND expires_at > ?
ORDER BY created_at DESC, id DESC LIMIT 1`
	var r approvalRow
	err := c.R.GetContext(ctx, &r, c.Q(q), k.WorkspaceID, k.Subject, k.Tool, k.ArgumentsHash, string(k.PrincipalKind),
		k.PolicyRevision, c.Time(now))
	if err != nil {
		return nil, c.Translate(err, Msgs{NotFound: "no open approval for this call"})
	}
	return r.approval()
}

// ListApprovals returns the approvals matching f, newest first, at most
// f.Limit (default 100, max 1000). Status pending with a non-zero f.Now
// leaves out those whose expiry has passed.
func (c *Core) ListApprovals(ctx context.Context, f approvals.Filter) ([]approvals.Approval, error) {
	var where []string
	var args []any
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.WorkspaceID != "" {
		where, args = append(where, "workspace_id = ?"), append(args, f.WorkspaceID)
	}
	if f.Subject != "" || f.PrincipalKind != "" {
		where, args = append(where, "principal_kind = ? AND subject = ?"), append(args, string(f.PrincipalKind), f.Subject)
	}
	if f.Status == approvals.StatusPending && !f.Now.IsZero() {
		where, args = append(where, "expires_at > ?"), append(args, c.Time(f.Now))
	}
	q := `SELECT ` + approvalColumns + ` FROM approvals`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	var rows []approvalRow
	if err := c.R.SelectContext(ctx, &rows, c.Q(q), append(args, auditLimit(f.Limit))...); err != nil {
		return nil, c.DriverError(err)
	}
	out := make([]approvals.Approval, 0, len(rows))
	for _, r := range rows {
		a, err := r.approval()
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, nil
}

// DecideApproval approves or rejects (status ApprovalApproved or
// ApprovalRejected) the pending approval id at at, naming decidedBy and
// reason, and returns it as stored. The move is one conditional UPDATE,
// so of two decisions (two people, two replicas, a person and the
// elicitation) exactly one wins: the other gets EConflict saying what
// the approval already is. A pending approval whose expiry has passed is
// marked expired and refused the same way. ENotFound for an unknown id,
// EInvalid for another status.
func (c *Core) DecideApproval(ctx context.Context, id, status, decidedBy, reason string, at time.Time) (*approvals.Approval, error) {
	if status != approvals.StatusApproved && status != approvals.StatusRejected {
		return nil, gateway.Errorf(gateway.EInvalid, "an approval is decided as approved or rejected, not %q", status)
	}
	moved, a, err := c.moveApproval(ctx, id, `status = ?, decided_by = ?, decided_at = ?, reason = ?`,
		[]any{status, decidedBy, c.Time(at), reason}, `status = 'pending' AND expires_at > ?`, c.Time(at))
	if err != nil || moved {
		return a, err
	}
	if a.Status == approvals.StatusPending { // its expiry passed
		if a, err = c.ExpireApproval(ctx, id, at); err != nil {
			return nil, err
		}
	}
	return nil, approvalConflict(a, "decided")
}

// ExpireApproval marks the approval id expired if it is still pending and
// its expiry is at or before at, and returns it as stored (whatever its
// status: a decision that came first stands). ENotFound for an unknown id.
func (c *Core) ExpireApproval(ctx context.Context, id string, at time.Time) (*approvals.Approval, error) {
	_, a, err := c.moveApproval(ctx, id, `status = 'expired'`, nil, `status = 'pending' AND expires_at <= ?`, c.Time(at))
	return a, err
}

// UseApproval marks the approved approval id used at at, for the call with
// argumentsHash, and returns it: the one step that lets its call be
// dispatched, so an approval runs its call at most once, whichever replica
// asks first. EConflict when it is not approved (pending, rejected,
// expired or used already) or was approved for other arguments; ENotFound
// for an unknown id.
func (c *Core) UseApproval(ctx context.Context, id, argumentsHash string, at time.Time) (*approvals.Approval, error) {
	moved, a, err := c.moveApproval(ctx, id, `status = 'used', used_at = ?`, []any{c.Time(at)},
		`status = 'approved' AND arguments_hash = ?`, argumentsHash)
	if err != nil || moved {
		return a, err
	}
	if a.Status == approvals.StatusApproved {
		return nil, gateway.Errorf(gateway.EConflict, "approval %s was given for other arguments of %s; a changed call needs an approval of its own", a.ID, a.Tool)
	}
	return nil, approvalConflict(a, "used")
}

// moveApproval runs UPDATE approvals SET set WHERE id = ? AND cond and
// returns whether it changed the row, and the row as stored afterwards.
func (c *Core) moveApproval(ctx context.Context, id, set string, setArgs []any, cond string, condArgs ...any) (bool, *approvals.Approval, error) {
	args := append(append(setArgs, id), condArgs...)
	res, err := c.W.ExecContext(ctx, c.Q(`UPDATE approvals SET `+set+` WHERE id = ? AND `+cond), args...)
	if err != nil {
		return false, nil, c.DriverError(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, nil, c.DriverError(err)
	}
	a, err := c.Approval(ctx, id)
	if err != nil {
		return false, nil, err
	}
	return n > 0, a, nil
}

// approvalConflict says why a, in its current status, cannot be what (decided, used).
func approvalConflict(a *approvals.Approval, what string) error {
	msg := fmt.Sprintf("approval %s is %s and cannot be %s", a.ID, a.Status, what)
	switch a.Status {
	case approvals.StatusApproved, approvals.StatusRejected:
		msg += fmt.Sprintf(" again: %s decided it", a.DecidedBy)
	case approvals.StatusExpired:
		msg += ": its time ran out; the call must be made again for a new approval"
	case approvals.StatusPending:
		msg += ": a person has not approved it yet"
	}
	return gateway.Errorf(gateway.EConflict, "%s", msg)
}

// TouchApprovalWatcher records that the admin approvals stream id is open
// until until (renewed while it stays open), and deletes the records of
// streams that were not renewed in time.
func (c *Core) TouchApprovalWatcher(ctx context.Context, id string, until time.Time) error {
	const q = `INSERT INTO approval_watchers (id, until) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET until = excluded.until`
	if _, err := c.W.ExecContext(ctx, c.Q(q), id, c.Time(until)); err != nil {
		return c.DriverError(err)
	}
	_, err := c.Delete(ctx, `DELETE FROM approval_watchers WHERE until <= ?`, c.Time(Now()))
	return err
}

// DeleteApprovalWatcher removes the record of the stream id (it closed);
// no record is not an error.
func (c *Core) DeleteApprovalWatcher(ctx context.Context, id string) error {
	_, err := c.Delete(ctx, `DELETE FROM approval_watchers WHERE id = ?`, id)
	return err
}

// ApprovalWatchers returns how many admin approvals streams, on any
// replica, are recorded open at now.
func (c *Core) ApprovalWatchers(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := c.R.GetContext(ctx, &n, c.Q(`SELECT count(*) FROM approval_watchers WHERE until > ?`), c.Time(now))
	return n, c.DriverError(err)
}
