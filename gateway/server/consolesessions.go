package server

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/console"
	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
	"github.com/mcpgate/mcpgate/gateway/store"
)

// ConsoleSessionStore keeps the console's signed-in sessions in the audit
// store, so every replica on one database serves a signed-in visitor and a
// restart keeps them (sqlcore.Core's console session methods).
type ConsoleSessionStore = store.ConsoleSessions

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
