package admin

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
)

// Store is what the admin API needs from the audit store. Every Put creates
// or replaces; every read returns what the Puts stored; lists are sorted by
// id (or name). Methods return an ENotFound *gateway.Error when the record or
// a parent record (workspace, profile, member) does not exist, whose message
// says what to create, EInvalid for values the schema rejects, and change
// nothing on error.
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
	// Workspace returns one workspace; ListWorkspaces at most limit
	// workspaces with ids after after ("" from the start).
	Workspace(ctx context.Context, id string) (*gateway.Workspace, error)
	ListWorkspaces(ctx context.Context, after string, limit int) ([]gateway.Workspace, error)
	ListMembers(ctx context.Context, workspaceID string) ([]gateway.Member, error)
	Member(ctx context.Context, workspaceID, userID string) (*gateway.Member, error)
	// DeleteMember removes the member and its permission overrides.
	DeleteMember(ctx context.Context, workspaceID, userID string) error
	ListProfiles(ctx context.Context, workspaceID string) ([]gateway.Profile, error)
	Profile(ctx context.Context, workspaceID, profileID string) (*gateway.Profile, error)
	// DefaultProfile returns the default profile's id, nil when none is set.
	DefaultProfile(ctx context.Context, workspaceID string) (*string, error)
	// DeleteProfile removes the profile; wasDefault reports that it was the
	// workspace default (now unset); tasks names at most a few of the total
	// running tasks whose audited calls ran under it (total -1: unknown).
	DeleteProfile(ctx context.Context, workspaceID, profileID string) (wasDefault bool, tasks []string, total int, err error)
	// WorkspaceOverrides and MemberOverrides return {} when none are set.
	WorkspaceOverrides(ctx context.Context, workspaceID string) (gateway.Permissions, error)
	MemberOverrides(ctx context.Context, workspaceID, userID string) (gateway.Permissions, error)
	// DeleteWorkspaceOverride and DeleteMemberOverride remove one key;
	// ENotFound when it is not set.
	DeleteWorkspaceOverride(ctx context.Context, workspaceID, key string) error
	DeleteMemberOverride(ctx context.Context, workspaceID, userID, key string) error
	ListSeatTypes(ctx context.Context) ([]gateway.SeatType, error)
	SeatType(ctx context.Context, name string) (*gateway.SeatType, error)
	// DeleteSeatType returns EConflict naming the members that hold it.
	DeleteSeatType(ctx context.Context, name string) error
	ListOrgPlans(ctx context.Context) ([]gateway.OrgPlan, error)
	OrgPlan(ctx context.Context, name string) (*gateway.OrgPlan, error)
	// DeleteOrgPlan returns EConflict naming the workspaces on it.
	DeleteOrgPlan(ctx context.Context, name string) error
	Task(ctx context.Context, workspaceID, taskID string) (*gateway.Task, error)
	// ListTasks returns at most limit tasks with ids after after, only
	// those in status unless it is "".
	ListTasks(ctx context.Context, workspaceID, status, after string, limit int) ([]gateway.Task, error)
	// ExternalLimits returns the stored limits; nil fields keep the default.
	ExternalLimits(ctx context.Context, workspaceID string) (gateway.ExternalLimits, error)
	// ListAuditEvents returns events newest first, at most f.Limit (default
	// 100, max 1000).
	ListAuditEvents(ctx context.Context, f gateway.AuditFilter) ([]gateway.AuditEvent, error)
}
