package demo

import "time"

// permission is a scoped tool grant (permission.grant, docs/requirements.md#tiers, #581-A).
type permission struct {
	ID             string     `json:"id"`
	Tool           string     `json:"tool"`
	Scope          string     `json:"scope"` // task, project, workspace
	ScopeID        string     `json:"scope_id,omitempty"`
	AgentProfileID string     `json:"agent_profile_id,omitempty"`
	Status         string     `json:"status"` // active, revoked
	ExpiresAt      *time.Time `json:"expires_at"`
	GrantedBy      string     `json:"granted_by"`
	GrantedAt      time.Time  `json:"granted_at"`
	RevokedAt      *time.Time `json:"revoked_at,omitempty"`
	RevokedBy      string     `json:"revoked_by,omitempty"`
}

func genPermissions(w *workspace, g *gen) {
	w.permissions = append(w.permissions,
		&permission{ID: w.newID("perm"), Tool: "issue.comment", Scope: "project", ScopeID: w.projects[0].ID, Status: "active",
			GrantedBy: "user:owner", GrantedAt: g.ago(24*time.Hour, 10*24*time.Hour)},
		&permission{ID: w.newID("perm"), Tool: "schedule.pause", Scope: "workspace", AgentProfileID: w.profiles[0].ID, Status: "active",
			ExpiresAt: ptr(g.base.Add(7 * 24 * time.Hour)), GrantedBy: "user:admin", GrantedAt: g.ago(time.Hour, 48*time.Hour)},
	)
}

func permissionTools() map[string]tool {
	return map[string]tool{
		"permission.grant":  {required: []string{"tool", "scope"}, handle: permissionGrant},
		"permission.revoke": {required: []string{"permission_id"}, handle: permissionRevoke},
	}
}

func permissionGrant(w *workspace, r *request) (any, error) {
	if !r.known(r.str("tool")) {
		return nil, refuse("%q is not a SupaCloud tool; grant one of the names tools/list shows", r.str("tool"))
	}
	scopeID, err := w.grantScope(r)
	if err != nil {
		return nil, err
	}
	if id := r.str("agent_profile_id"); id != "" && w.profileByID(id) == nil {
		return nil, notFound("agent profile", id)
	}
	expires, err := expiry(r)
	if err != nil {
		return nil, err
	}
	p := &permission{ID: w.newID("perm"), Tool: r.str("tool"), Scope: r.str("scope"), ScopeID: scopeID, AgentProfileID: r.str("agent_profile_id"),
		Status: "active", ExpiresAt: expires, GrantedBy: actorOr(r.Actor), GrantedAt: r.now}
	w.permissions = append(w.permissions, p)
	return map[string]any{"permission": p}, nil
}

// grantScope checks scope and scope_id. A task grant defaults to the
// session's own task; a project grant needs a project of this workspace.
func (w *workspace) grantScope(r *request) (string, error) {
	id := r.str("scope_id")
	switch r.str("scope") {
	case "workspace":
		return "", nil
	case "project":
		if w.projectByID(id) == nil {
			return "", notFound("project", id)
		}
		return id, nil
	case "task":
		if id == "" {
			id = r.TaskID
		}
		if id == "" {
			return "", refuse("a task-scoped grant needs scope_id (the task id)")
		}
		if id != r.TaskID && w.taskByID(id) == nil {
			return "", notFound("task", id)
		}
		return id, nil
	}
	return "", refuse("scope must be task, project or workspace, not %q", r.str("scope"))
}

func expiry(r *request) (*time.Time, error) {
	s := r.str("expires_at")
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, refuse("expires_at %q is not an RFC 3339 time such as 2030-01-31T18:00:00Z", s)
	}
	if !t.After(r.now) {
		return nil, refuse("expires_at %s is in the past; give a future time", s)
	}
	return ptr(t.UTC()), nil
}

func permissionRevoke(w *workspace, r *request) (any, error) {
	id := r.str("permission_id")
	p := find(w.permissions, func(p *permission) bool { return p.ID == id })
	if p == nil {
		return nil, notFound("permission", id)
	}
	if p.Status == "revoked" {
		return nil, refuse("permission %s was already revoked at %s", id, p.RevokedAt.Format(time.RFC3339))
	}
	p.Status, p.RevokedAt, p.RevokedBy = "revoked", ptr(r.now), actorOr(r.Actor)
	return map[string]any{"permission": p}, nil
}
