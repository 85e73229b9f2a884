package server

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/console"
	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
)

// ConsoleSessionStore keeps the console's signed-in sessions in the audit
// store, so every replica on one database serves a signed-in visitor and a
// restart keeps them (sqlcore.Core's console session methods).
type ConsoleSessionStore interface {
	// CreateConsoleSession stores s; EConflict when its IDHash is taken.
	CreateConsoleSession(ctx context.Context, s *consolesession.Session) error
	// ConsoleSession returns the session if it expires after now;
	// ENotFound otherwise.
	ConsoleSession(ctx context.Context, idHash string, now time.Time) (*consolesession.Session, error)
	// SetConsoleFlash replaces the session's flash; ENotFound if unknown.
	SetConsoleFlash(ctx context.Context, idHash string, flash []byte) error
	// TakeConsoleFlash returns and clears the flash (nil when none).
	TakeConsoleFlash(ctx context.Context, idHash string) ([]byte, error)
	// DeleteConsoleSession removes the session (no error if unknown).
	DeleteConsoleSession(ctx context.Context, idHash string) error
	// DeleteExpiredConsoleSessions deletes sessions expired at or before
	// before.
	DeleteExpiredConsoleSessions(ctx context.Context, before time.Time) (int64, error)
}

// consoleSessions adapts a ConsoleSessionStore to console.SessionStore:
// the console's names, and no session (nil) for ENotFound.
type consoleSessions struct{ s ConsoleSessionStore }

var _ console.SessionStore = consoleSessions{}

func (c consoleSessions) CreateSession(ctx context.Context, s *consolesession.Session) error {
	return c.s.CreateConsoleSession(ctx, s)
}

func (c consoleSessions) Session(ctx context.Context, idHash string, now time.Time) (*consolesession.Session, error) {
	s, err := c.s.ConsoleSession(ctx, idHash, now)
	if gateway.ErrorCodeOf(err) == gateway.ENotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (c consoleSessions) SetFlash(ctx context.Context, idHash string, flash []byte) error {
	return c.s.SetConsoleFlash(ctx, idHash, flash)
}

func (c consoleSessions) TakeFlash(ctx context.Context, idHash string) ([]byte, error) {
	return c.s.TakeConsoleFlash(ctx, idHash)
}

func (c consoleSessions) DeleteSession(ctx context.Context, idHash string) error {
	return c.s.DeleteConsoleSession(ctx, idHash)
}
