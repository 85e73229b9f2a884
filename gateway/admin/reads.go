package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/mcpgate/mcpgate/gateway"
)

// The GETs and DELETEs of the admin API: GET answers the shape the PUT of
// the same path answers; collections are {"<name>":[…]} sorted by id (or
// name), [] when empty; DELETE answers 204, except for a profile, whose
// reply says what falls back.

// Page bounds of the listings that can grow without limit (workspaces,
// tasks).
const (
	defaultPageLimit = 100
	maxPageLimit     = 1000
)

// The external-gateway limits that apply where a workspace stores null
// (docs/requirements.md#external-limits).
const (
	// DefaultReadsPerToolHourly is the default of reads_per_tool_hourly.
	DefaultReadsPerToolHourly = 50
	// DefaultOpsPerTokenHourly is the default of ops_per_token_hourly.
	DefaultOpsPerTokenHourly = 30
)

// page is the limit and cursor of a paged listing.
type page struct {
	limit int
	after string
}

// pageQuery checks the query of a paged listing: limit, cursor (the
// next_cursor of the previous page) and the extra parameters, each at most
// once.
func pageQuery(q url.Values, extra ...string) (page, error) {
	accepted := append([]string{"limit", "cursor"}, extra...)
	for key, vals := range q {
		if !slices.Contains(accepted, key) {
			return page{}, invalid("unknown query parameter %q; accepted: %s", clip(key), strings.Join(accepted, ", "))
		}
		if len(vals) > 1 {
			return page{}, invalid("query parameter %q is given %d times; give it once", key, len(vals))
		}
	}
	p := page{limit: defaultPageLimit, after: q.Get("cursor")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageLimit {
			return p, invalid("limit %q is not valid; use a whole number from 1 to %d", clip(s), maxPageLimit)
		}
		p.limit = n
	}
	if p.after != "" && !idPattern.MatchString(p.after) {
		return p, invalid("cursor %q is not one this API returned; pass next_cursor from the previous page unchanged, or leave cursor out to start from the first", clip(p.after))
	}
	return p, nil
}

// writePage writes {"<name>": items} with next_cursor when the page is full.
func writePage[T any](w http.ResponseWriter, name string, items []T, p page, id func(T) string) {
	if items == nil {
		items = []T{}
	}
	out := map[string]any{name: items}
	if len(items) == p.limit {
		out["next_cursor"] = id(items[len(items)-1])
	}
	writeJSON(w, http.StatusOK, out)
}

// writeList writes {"<name>": items}, [] when empty.
func writeList[T any](w http.ResponseWriter, name string, items []T) {
	if items == nil {
		items = []T{}
	}
	writeJSON(w, http.StatusOK, map[string]any{name: items})
}

// listWorkspaces: GET /workspaces?limit=&cursor= → {"workspaces":[…],
// "next_cursor"?} by id.
func (h *handler) listWorkspaces(w http.ResponseWriter, r *http.Request) error {
	p, err := pageQuery(r.URL.Query())
	if err != nil {
		return err
	}
	list, err := h.store.ListWorkspaces(r.Context(), p.after, p.limit)
	if err != nil {
		return err
	}
	writePage(w, "workspaces", list, p, func(w gateway.Workspace) string { return w.ID })
	return nil
}

// getWorkspace: GET /workspaces/{ws} → {"id","name","slug","org_plan","created_at"}.
func (h *handler) getWorkspace(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	ws, err := h.store.Workspace(r.Context(), ids[0])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ws)
	return nil
}

// listMembers: GET /workspaces/{ws}/members → {"members":[…]} by user id.
func (h *handler) listMembers(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	list, err := h.store.ListMembers(r.Context(), ids[0])
	if err != nil {
		return err
	}
	writeList(w, "members", list)
	return nil
}

// getMember: GET /workspaces/{ws}/members/{user}.
func (h *handler) getMember(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "user")
	if err != nil {
		return err
	}
	m, err := h.store.Member(r.Context(), ids[0], ids[1])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// deleteMember: DELETE /workspaces/{ws}/members/{user} → 204; the
// member's overrides go with it, and its sessions are refused from their
// next call (the acting user must be a member).
func (h *handler) deleteMember(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "user")
	if err != nil {
		return err
	}
	if err := h.store.DeleteMember(r.Context(), ids[0], ids[1]); err != nil {
		return err
	}
	h.changed(r, ids[0])
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listProfiles: GET /workspaces/{ws}/profiles → {"profiles":[…]} by id.
func (h *handler) listProfiles(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	list, err := h.store.ListProfiles(r.Context(), ids[0])
	if err != nil {
		return err
	}
	for i := range list {
		list[i] = profileOut(list[i])
	}
	writeList(w, "profiles", list)
	return nil
}

// profileOut makes sure the allowlist is [] rather than null.
func profileOut(p gateway.Profile) gateway.Profile {
	if p.Allowlist == nil {
		p.Allowlist = []string{}
	}
	return p
}

// getProfile: GET /workspaces/{ws}/profiles/{profile}.
func (h *handler) getProfile(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "profile")
	if err != nil {
		return err
	}
	p, err := h.store.Profile(r.Context(), ids[0], ids[1])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, profileOut(*p))
	return nil
}

// profileDeletion is the reply of DELETE /workspaces/{ws}/profiles/{profile}.
type profileDeletion struct {
	WorkspaceID string `json:"workspace_id"`
	ProfileID   string `json:"profile_id"`
	// WasDefault: the profile was the workspace default, which is now unset.
	WasDefault bool `json:"was_default"`
	// RunningTasks names running tasks whose audited calls ran under the
	// profile, at most a few; RunningTasksTotal counts them all (-1: they
	// could not be read).
	RunningTasks      []string `json:"running_tasks"`
	RunningTasksTotal int      `json:"running_tasks_total"`
	Message           string   `json:"message"`
}

// deleteProfile: DELETE /workspaces/{ws}/profiles/{profile} → 200
// profileDeletion. Deleting the default unsets it; the message says what
// the sessions that used the profile get from their next call.
func (h *handler) deleteProfile(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "profile")
	if err != nil {
		return err
	}
	wasDefault, tasks, total, err := h.store.DeleteProfile(r.Context(), ids[0], ids[1])
	if err != nil {
		return err
	}
	h.changed(r, ids[0])
	if tasks == nil {
		tasks = []string{}
	}
	writeJSON(w, http.StatusOK, profileDeletion{WorkspaceID: ids[0], ProfileID: ids[1], WasDefault: wasDefault,
		RunningTasks: tasks, RunningTasksTotal: total, Message: profileDeletionMessage(ids[0], ids[1], wasDefault, tasks, total)})
	return nil
}

// profileDeletionMessage says what happened and what the sessions that
// used the profile get now. Sessions without agent_profile_id follow the
// workspace default; a session whose JWT still names the deleted profile
// falls back in the same way, and each of its decisions carries the
// notice profile.deleted (policies/supacloud/profile.rego), until a
// profile with that id is created again.
func profileDeletionMessage(ws, profile string, wasDefault bool, tasks []string, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "profile %s deleted from workspace %s. ", profile, ws)
	if wasDefault {
		fmt.Fprintf(&b, "It was the workspace default, so workspace %s has no default profile now: sessions without agent_profile_id get the read-only fallback until PUT /admin/v1/workspaces/%s/default-profile names another profile. ", ws, ws)
	}
	switch {
	case total < 0:
		b.WriteString("The running tasks that used it could not be listed; GET /admin/v1/audit-events?workspace_id=" + ws + " shows which profiles recent calls ran under. ")
	case total == 0:
		b.WriteString("No running task of this workspace has made a call under it. ")
	default:
		more := ""
		if total > len(tasks) {
			more = fmt.Sprintf(" and %d more", total-len(tasks))
		}
		fmt.Fprintf(&b, "%d running task(s) made calls under it (%s%s). ", total, strings.Join(tasks, ", "), more)
	}
	fallback := "the workspace default profile, or the read-only fallback while there is none"
	if wasDefault {
		fallback = "the read-only fallback"
	}
	fmt.Fprintf(&b, "From their next call, sessions whose JWT names agent_profile_id %s fall back to %s, as sessions without agent_profile_id do, and their decisions and audit rows say so (profile.deleted); PUT /admin/v1/workspaces/%s/profiles/%s creates it again and gives it back to them.", profile, fallback, ws, profile)
	return b.String()
}

// getDefaultProfile: GET /workspaces/{ws}/default-profile →
// {"workspace_id","profile_id":"…"|null}.
func (h *handler) getDefaultProfile(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	id, err := h.store.DefaultProfile(r.Context(), ids[0])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspace_id": ids[0], "profile_id": id})
	return nil
}

// getWorkspaceOverrides: GET /workspaces/{ws}/permission-overrides → {"<key>":bool}.
func (h *handler) getWorkspaceOverrides(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	p, err := h.store.WorkspaceOverrides(r.Context(), ids[0])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, orEmpty(p))
	return nil
}

// getMemberOverrides: GET /workspaces/{ws}/members/{user}/permission-overrides.
func (h *handler) getMemberOverrides(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "user")
	if err != nil {
		return err
	}
	p, err := h.store.MemberOverrides(r.Context(), ids[0], ids[1])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, orEmpty(p))
	return nil
}

// pathKey returns the {key} path variable, checked as a permission key.
func pathKey(r *http.Request) (string, error) {
	key := mux.Vars(r)["key"]
	return key, checkPermissions("permission", gateway.Permissions{key: true})
}

// deleteWorkspaceOverride: DELETE /workspaces/{ws}/permission-overrides/{key} → 204.
func (h *handler) deleteWorkspaceOverride(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	key, err := pathKey(r)
	if err != nil {
		return err
	}
	if err := h.store.DeleteWorkspaceOverride(r.Context(), ids[0], key); err != nil {
		return err
	}
	h.changed(r, ids[0])
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteMemberOverride: DELETE /workspaces/{ws}/members/{user}/permission-overrides/{key} → 204.
func (h *handler) deleteMemberOverride(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "user")
	if err != nil {
		return err
	}
	key, err := pathKey(r)
	if err != nil {
		return err
	}
	if err := h.store.DeleteMemberOverride(r.Context(), ids[0], ids[1], key); err != nil {
		return err
	}
	h.changed(r, ids[0])
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listSeatTypes: GET /seat-types → {"seat_types":[…]} by name.
func (h *handler) listSeatTypes(w http.ResponseWriter, r *http.Request) error {
	list, err := h.store.ListSeatTypes(r.Context())
	if err != nil {
		return err
	}
	for i := range list {
		list[i].Permissions = orEmpty(list[i].Permissions)
	}
	writeList(w, "seat_types", list)
	return nil
}

// getSeatType: GET /seat-types/{name}.
func (h *handler) getSeatType(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "name")
	if err != nil {
		return err
	}
	st, err := h.store.SeatType(r.Context(), ids[0])
	if err != nil {
		return err
	}
	st.Permissions = orEmpty(st.Permissions)
	writeJSON(w, http.StatusOK, st)
	return nil
}

// deleteSeatType: DELETE /seat-types/{name} → 204, or 409 naming the
// members that still hold it.
func (h *handler) deleteSeatType(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "name")
	if err != nil {
		return err
	}
	if err := h.store.DeleteSeatType(r.Context(), ids[0]); err != nil {
		return err
	}
	h.changed(r, "")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listOrgPlans: GET /org-plans → {"org_plans":[…]} by name.
func (h *handler) listOrgPlans(w http.ResponseWriter, r *http.Request) error {
	list, err := h.store.ListOrgPlans(r.Context())
	if err != nil {
		return err
	}
	for i := range list {
		list[i].Permissions = orEmpty(list[i].Permissions)
	}
	writeList(w, "org_plans", list)
	return nil
}

// getOrgPlan: GET /org-plans/{name}.
func (h *handler) getOrgPlan(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "name")
	if err != nil {
		return err
	}
	o, err := h.store.OrgPlan(r.Context(), ids[0])
	if err != nil {
		return err
	}
	o.Permissions = orEmpty(o.Permissions)
	writeJSON(w, http.StatusOK, o)
	return nil
}

// deleteOrgPlan: DELETE /org-plans/{name} → 204, or 409 naming the
// workspaces still on it.
func (h *handler) deleteOrgPlan(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "name")
	if err != nil {
		return err
	}
	if err := h.store.DeleteOrgPlan(r.Context(), ids[0]); err != nil {
		return err
	}
	h.changed(r, "")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listTasks: GET /workspaces/{ws}/tasks?status=&limit=&cursor= →
// {"tasks":[…],"next_cursor"?} by id.
func (h *handler) listTasks(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	p, err := pageQuery(q, "status")
	if err != nil {
		return err
	}
	status := q.Get("status")
	if status != "" && !slices.Contains(taskStatuses, status) {
		return invalid("status %q is unknown; use one of %s", clip(status), strings.Join(taskStatuses, ", "))
	}
	list, err := h.store.ListTasks(r.Context(), ids[0], status, p.after, p.limit)
	if err != nil {
		return err
	}
	writePage(w, "tasks", list, p, func(t gateway.Task) string { return t.ID })
	return nil
}

// getTask: GET /workspaces/{ws}/tasks/{task}.
func (h *handler) getTask(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws", "task")
	if err != nil {
		return err
	}
	t, err := h.store.Task(r.Context(), ids[0], ids[1])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// limitsView is the reply of GET and PUT /workspaces/{ws}/external-limits:
// the stored values (null: the default) and the ones in effect.
type limitsView struct {
	WorkspaceID        string `json:"workspace_id"`
	ReadsPerToolHourly *int   `json:"reads_per_tool_hourly"`
	OpsPerTokenHourly  *int   `json:"ops_per_token_hourly"`
	Effective          struct {
		ReadsPerToolHourly int `json:"reads_per_tool_hourly"`
		OpsPerTokenHourly  int `json:"ops_per_token_hourly"`
	} `json:"effective"`
}

func limitsOut(ws string, l gateway.ExternalLimits) limitsView {
	v := limitsView{WorkspaceID: ws, ReadsPerToolHourly: l.ReadsPerToolHourly, OpsPerTokenHourly: l.OpsPerTokenHourly}
	v.Effective.ReadsPerToolHourly = orDefault(l.ReadsPerToolHourly, DefaultReadsPerToolHourly)
	v.Effective.OpsPerTokenHourly = orDefault(l.OpsPerTokenHourly, DefaultOpsPerTokenHourly)
	return v
}

func orDefault(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

// getExternalLimits: GET /workspaces/{ws}/external-limits → limitsView.
func (h *handler) getExternalLimits(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	l, err := h.store.ExternalLimits(r.Context(), ids[0])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, limitsOut(ids[0], l))
	return nil
}
