package sqlcore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"

	"time"

	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
)

// consoleColumns are read into consoleRow.
const consoleColumns = `id_hash, kind, workspace_id, subject, operator, csrf, sealed_token, flash, created_at, expires_at`

// consoleRow is a console_sessions row as either driver returns it.
type consoleRow struct {
	IDHash      string `db:"id_hash"`
	Kind        string `db:"kind"`
	WorkspaceID string `db:"workspace_id"`
	Subject     string `db:"subject"`
	Operator    string `db:"operator"`
	CSRF        string `db:"csrf"`
	SealedToken []byte `db:"sealed_token"`
	Flash       []byte `db:"flash"`
	CreatedAt   Time   `db:"created_at"`
	ExpiresAt   Time   `db:"expires_at"`
}

// consoleSessionGone is the message of a session that is unknown or past
// its expiry.
const consoleSessionGone = "console session not found or expired; sign in again"

// CreateConsoleSession stores s (times UTC, to the microsecond) and ends
// the principal's sessions beyond the newest
// consolesession.MaxPerPrincipal. EConflict when its IDHash is taken.
func (c *Core) CreateConsoleSession(ctx context.Context, s *consolesession.Session) error {
	const q = `INSERT INTO console_sessions (id_hash, kind, workspace_id, subject, operator, csrf, sealed_token, flash,
created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	_, err := c.W.ExecContext(ctx, c.Q(q), s.IDHash, string(s.Kind), s.WorkspaceID, s.Subject, s.Operator, s.CSRF,
		s.SealedToken, nullBytes(s.Flash), c.Time(s.CreatedAt), c.Time(s.ExpiresAt))
	if err != nil {
		return c.Translate(err, Msgs{Conflict: "console session id is taken; sign in again"})
	}
	const trim = `DELETE FROM console_sessions WHERE kind = ? AND workspace_id = ? AND subject = ? AND id_hash NOT IN (
SELECT id_hash FROM console_sessions WHERE kind = ? AND workspace_id = ? AND subject = ?
ORDER BY created_at DESC, id_hash DESC LIMIT ?)`
	_, err = c.W.ExecContext(ctx, c.Q(trim), string(s.Kind), s.WorkspaceID, s.Subject,
		string(s.Kind), s.WorkspaceID, s.Subject, consolesession.MaxPerPrincipal)
	return c.Translate(err, Msgs{})
}

// ConsoleSession returns the session idHash names if it expires after
// now; ENotFound otherwise.
func (c *Core) ConsoleSession(ctx context.Context, idHash string, now time.Time) (*consolesession.Session, error) {
	var r consoleRow
	err := c.W.GetContext(ctx, &r, c.Q(`SELECT `+consoleColumns+` FROM console_sessions WHERE id_hash = ? AND expires_at > ?`),
		idHash, c.Time(now))
	if err != nil {
		return nil, c.Translate(err, Msgs{NotFound: consoleSessionGone})
	}
	return &consolesession.Session{IDHash: r.IDHash, Kind: consolesession.Kind(r.Kind), WorkspaceID: r.WorkspaceID,
		Subject: r.Subject, Operator: r.Operator, CSRF: r.CSRF, SealedToken: r.SealedToken, Flash: r.Flash,
		CreatedAt: r.CreatedAt.Time, ExpiresAt: r.ExpiresAt.Time}, nil
}

// SetConsoleFlash replaces the session's flash (nil clears it); ENotFound
// when the session does not exist.
func (c *Core) SetConsoleFlash(ctx context.Context, idHash string, flash []byte) error {
	res, err := c.W.ExecContext(ctx, c.Q(`UPDATE console_sessions SET flash = ? WHERE id_hash = ?`), nullBytes(flash), idHash)
	return c.ExpectOne(res, err, consoleSessionGone)
}

// TakeConsoleFlash returns the session's flash and clears it, so of two
// concurrent takes (on any replicas) at most one gets it; nil when there
// is none or the session does not exist.
func (c *Core) TakeConsoleFlash(ctx context.Context, idHash string) ([]byte, error) {
	for range 3 {
		var flash []byte
		err := c.W.GetContext(ctx, &flash, c.Q(`SELECT flash FROM console_sessions WHERE id_hash = ?`), idHash)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && flash == nil) {
			return nil, nil
		}
		if err != nil {
			return nil, c.DriverError(err)
		}
		// Compare and swap: only the take that still sees this flash clears it.
		res, err := c.W.ExecContext(ctx, c.Q(`UPDATE console_sessions SET flash = NULL WHERE id_hash = ? AND flash = ?`), idHash, flash)
		if err != nil {
			return nil, c.DriverError(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, c.DriverError(err)
		} else if n == 1 {
			return bytes.Clone(flash), nil
		}
	}
	return nil, nil
}

// DeleteConsoleSession removes the session (sign-out); removing one that
// does not exist is not an error.
func (c *Core) DeleteConsoleSession(ctx context.Context, idHash string) error {
	_, err := c.Delete(ctx, `DELETE FROM console_sessions WHERE id_hash = ?`, idHash)
	return err
}

// DeleteExpiredConsoleSessions deletes the sessions whose expiry is at or
// before before and returns how many it deleted.
func (c *Core) DeleteExpiredConsoleSessions(ctx context.Context, before time.Time) (int64, error) {
	return c.Delete(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, c.Time(before))
}

// nullBytes stores nil as NULL.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
