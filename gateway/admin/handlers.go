package admin

import (
	"net/http"

	"github.com/mcpgate/mcpgate/gateway"
)

// putWorkspace: PUT /workspaces/{ws} {"name","slug","org_plan"}; name and
// slug are required, org_plan optional ("" means no plan).
func (h *handler) putWorkspace(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	var in struct {
		Name    string `json:"name"`
		Slug    string `json:"slug"`
		OrgPlan string `json:"org_plan"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	if err := checkText("name", in.Name); err != nil {
		return err
	}
	if !slugPattern.MatchString(in.Slug) {
		return invalid("field \"slug\" is %q; use 1-63 characters from a-z 0-9 - starting with a letter or digit", clip(in.Slug))
	}
	if in.OrgPlan != "" {
		if err := checkID("org_plan", in.OrgPlan); err != nil {
			return err
		}
	}
	rec := &gateway.Workspace{ID: ids[0], Name: in.Name, Slug: in.Slug, OrgPlan: in.OrgPlan, CreatedAt: h.opts.Now().UTC()}
	if err := h.store.PutWorkspace(r.Context(), rec); err != nil {
		return err
	}
	h.changed(r, rec.ID)
	writeJSON(w, http.StatusOK, rec)
	return nil
}

// putMember: PUT /workspaces/{ws}/members/{user} {"role","seat_type"};
// role is required, seat_type optional.
func (h *handler) putMember(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "user")
	if err != nil {
		return err
	}
	var in struct {
		Role     string `json:"role"`
		SeatType string `json:"seat_type"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	if err := checkEnum("role", in.Role, memberRoles); err != nil {
		return err
	}
	if in.SeatType != "" {
		if err := checkID("seat_type", in.SeatType); err != nil {
			return err
		}
	}
	rec := &gateway.Member{WorkspaceID: ids[0], UserID: ids[1], Role: in.Role, SeatType: in.SeatType}
	if err := h.store.PutMember(r.Context(), rec); err != nil {
		return err
	}
	h.changed(r, rec.WorkspaceID)
	writeJSON(w, http.StatusOK, rec)
	return nil
}

// putProfile: PUT /workspaces/{ws}/profiles/{profile}
// {"name","allowlist":[…],"script_allowlist":[…]|null}. allowlist is
// required ([] grants only the baseline,
// docs/requirements.md#baseline); script_allowlist absent or null means no restriction on
// script.run, [] means no script (docs/requirements.md#script-run-carve-out). The
// reply is the stored profile with its is_workspace_default flag, which
// only default-profile changes.
func (h *handler) putProfile(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "profile")
	if err != nil {
		return err
	}
	var in struct {
		Name            string    `json:"name"`
		Allowlist       *[]string `json:"allowlist"`
		ScriptAllowlist *[]string `json:"script_allowlist"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	rec, err := h.profileFrom(ids, in.Name, in.Allowlist, in.ScriptAllowlist)
	if err != nil {
		return err
	}
	if err := h.store.PutProfile(r.Context(), rec); err != nil {
		return err
	}
	h.changed(r, rec.WorkspaceID)
	writeJSON(w, http.StatusOK, profileOut(*rec))
	return nil
}

func (h *handler) profileFrom(ids []string, name string, allow, scripts *[]string) (*gateway.Profile, error) {
	if err := checkText("name", name); err != nil {
		return nil, err
	}
	if allow == nil {
		return nil, invalid("field \"allowlist\" is required; send [] for a profile that grants only the baseline tools")
	}
	if err := checkEntries("allowlist", *allow, h.opts.ValidateGrant); err != nil {
		return nil, err
	}
	rec := &gateway.Profile{WorkspaceID: ids[0], ID: ids[1], Name: name, Allowlist: *allow}
	if scripts != nil {
		if err := checkEntries("script_allowlist", *scripts, nil); err != nil {
			return nil, err
		}
		rec.ScriptAllowlist = *scripts
	}
	return rec, nil
}

// putDefaultProfile: PUT /workspaces/{ws}/default-profile
// {"profile_id":"…"|null}; null clears the default (docs/requirements.md#workspace-default-profile: at most one
// per workspace, setting one clears the previous).
func (h *handler) putDefaultProfile(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	var in struct {
		ProfileID optional[string] `json:"profile_id"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	if !in.ProfileID.Set {
		return invalid("field \"profile_id\" is required; send a profile id, or null to clear the default")
	}
	var profileID *string
	if !in.ProfileID.Null {
		if err := checkID("profile_id", in.ProfileID.Value); err != nil {
			return err
		}
		profileID = &in.ProfileID.Value
	}
	if err := h.store.SetDefaultProfile(r.Context(), ids[0], profileID); err != nil {
		return err
	}
	h.changed(r, ids[0])
	writeJSON(w, http.StatusOK, map[string]any{"workspace_id": ids[0], "profile_id": profileID})
	return nil
}

// putWorkspaceOverrides: PUT /workspaces/{ws}/permission-overrides
// {"<key>":bool}; replaces the workspace's overrides ({} clears them).
func (h *handler) putWorkspaceOverrides(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	p, err := h.decodePermissions(w, r)
	if err != nil {
		return err
	}
	if err := h.store.PutWorkspaceOverrides(r.Context(), ids[0], p); err != nil {
		return err
	}
	h.changed(r, ids[0])
	writeJSON(w, http.StatusOK, p)
	return nil
}

// putMemberOverrides: PUT /workspaces/{ws}/members/{user}/permission-overrides
// {"<key>":bool}; replaces the member's overrides ({} clears them).
func (h *handler) putMemberOverrides(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "user")
	if err != nil {
		return err
	}
	p, err := h.decodePermissions(w, r)
	if err != nil {
		return err
	}
	if err := h.store.PutMemberOverrides(r.Context(), ids[0], ids[1], p); err != nil {
		return err
	}
	h.changed(r, ids[0])
	writeJSON(w, http.StatusOK, p)
	return nil
}

func (h *handler) decodePermissions(w http.ResponseWriter, r *http.Request) (gateway.Permissions, error) {
	p := gateway.Permissions{}
	if err := h.decode(w, r, &p); err != nil {
		return nil, err
	}
	return p, checkPermissions("permission", p)
}

// putSeatType: PUT /seat-types/{name} {"enterprise_only":bool,
// "permissions":{…}}; both optional (false, {}).
func (h *handler) putSeatType(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "name")
	if err != nil {
		return err
	}
	var in struct {
		EnterpriseOnly bool                `json:"enterprise_only"`
		Permissions    gateway.Permissions `json:"permissions"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	rec := &gateway.SeatType{Name: ids[0], EnterpriseOnly: in.EnterpriseOnly, Permissions: orEmpty(in.Permissions)}
	if err := checkPermissions("permissions", rec.Permissions); err != nil {
		return err
	}
	if err := h.store.PutSeatType(r.Context(), rec); err != nil {
		return err
	}
	h.changed(r, "")
	writeJSON(w, http.StatusOK, rec)
	return nil
}

// putOrgPlan: PUT /org-plans/{name} {"permissions":{…}} (optional, {}).
func (h *handler) putOrgPlan(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "name")
	if err != nil {
		return err
	}
	var in struct {
		Permissions gateway.Permissions `json:"permissions"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	rec := &gateway.OrgPlan{Name: ids[0], Permissions: orEmpty(in.Permissions)}
	if err := checkPermissions("permissions", rec.Permissions); err != nil {
		return err
	}
	if err := h.store.PutOrgPlan(r.Context(), rec); err != nil {
		return err
	}
	h.changed(r, "")
	writeJSON(w, http.StatusOK, rec)
	return nil
}

func orEmpty(p gateway.Permissions) gateway.Permissions {
	if p == nil {
		return gateway.Permissions{}
	}
	return p
}

// putTask: PUT /workspaces/{ws}/tasks/{task} {"status"}.
func (h *handler) putTask(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "task")
	if err != nil {
		return err
	}
	var in struct {
		Status string `json:"status"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	if err := checkEnum("status", in.Status, taskStatuses); err != nil {
		return err
	}
	rec := &gateway.Task{WorkspaceID: ids[0], ID: ids[1], Status: in.Status, UpdatedAt: h.opts.Now().UTC()}
	if err := h.store.PutTask(r.Context(), rec); err != nil {
		return err
	}
	h.changed(r, rec.WorkspaceID)
	writeJSON(w, http.StatusOK, rec)
	return nil
}

// putExternalLimits: PUT /workspaces/{ws}/external-limits
// {"reads_per_tool_hourly":N|null,"ops_per_token_hourly":N|null}; null or
// absent keeps the default (docs/requirements.md#external-limits: 50 and 30); the reply also
// shows the limits in effect.
func (h *handler) putExternalLimits(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	var in gateway.ExternalLimits
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	if err := checkLimit("reads_per_tool_hourly", in.ReadsPerToolHourly); err != nil {
		return err
	}
	if err := checkLimit("ops_per_token_hourly", in.OpsPerTokenHourly); err != nil {
		return err
	}
	if err := h.store.PutExternalLimits(r.Context(), ids[0], in); err != nil {
		return err
	}
	h.changed(r, ids[0])
	writeJSON(w, http.StatusOK, limitsOut(ids[0], in))
	return nil
}

// flowRulesView is the body of PUT and the reply of GET and PUT
// /workspaces/{ws}/flow-rules: whether the workspace's calls are decided
// by the shipped flow rule set (docs/policy.md, "Flow rules").
type flowRulesView struct {
	WorkspaceID string `json:"workspace_id"`
	Enabled     bool   `json:"enabled"`
}

// putFlowRules: PUT /workspaces/{ws}/flow-rules {"enabled": true|false}
// switches the shipped flow rule set on or off for the workspace
// (docs/requirements.md#flow-rules); the next call of the workspace on
// every replica is decided with it (the change feed drops cached callers).
func (h *handler) putFlowRules(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	if in.Enabled == nil {
		return invalid(`field "enabled" is required; send {"enabled": true} to switch the flow rule set on, {"enabled": false} to switch it off`)
	}
	if err := h.store.SetWorkspaceFlowRules(r.Context(), ids[0], *in.Enabled); err != nil {
		return err
	}
	h.changed(r, ids[0])
	writeJSON(w, http.StatusOK, flowRulesView{WorkspaceID: ids[0], Enabled: *in.Enabled})
	return nil
}

// getFlowRules: GET /workspaces/{ws}/flow-rules → flowRulesView.
func (h *handler) getFlowRules(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	ws, err := h.store.Workspace(r.Context(), ids[0])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, flowRulesView{WorkspaceID: ws.ID, Enabled: ws.FlowRules})
	return nil
}
