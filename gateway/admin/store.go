package admin

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
)

// Store is what the admin API needs from the audit store. Every Put creates
// or replaces. Methods return an ENotFound *gateway.Error when a parent
// record (workspace, profile, member) does not exist, EInvalid for values the
// schema rejects, and change nothing on error.
type Store interface {
	PutWorkspace(ctx context.Context, w *gateway.Workspace) error
	PutMember(ctx context.Context, m *gateway.Member) error
	// PutProfile keeps the profile's default flag as it was.
	PutProfile(ctx context.Context, p *gateway.Profile) error
	// SetDefaultProfile makes profileID the workspace default (clearing the
	// previous one) or, with nil, clears the default.
	SetDefaultProfile(ctx context.Context, workspaceID string, profileID *string) error
	PutWorkspaceOverrides(ctx context.Context, workspaceID string, p gateway.Permissions) error
	PutMemberOverrides(ctx context.Context, workspaceID, userID string, p gateway.Permissions) error
	PutSeatType(ctx context.Context, s *gateway.SeatType) error
	PutOrgPlan(ctx context.Context, o *gateway.OrgPlan) error
	PutTask(ctx context.Context, t *gateway.Task) error
	// CreateAPIToken stores t (hash and fingerprint already set).
	CreateAPIToken(ctx context.Context, t *gateway.APIToken) error
	ListAPITokens(ctx context.Context, workspaceID string) ([]gateway.APIToken, error)
	// RevokeAPIToken marks the token revoked; ENotFound if unknown.
	RevokeAPIToken(ctx context.Context, fingerprint string) error
	PutExternalLimits(ctx context.Context, workspaceID string, l gateway.ExternalLimits) error
	// ListAuditEvents returns events newest first, at most f.Limit (default
	// 100, max 1000).
	ListAuditEvents(ctx context.Context, f gateway.AuditFilter) ([]gateway.AuditEvent, error)
}
