package admin

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/gateway"
)

var _ Store = (*fakeStore)(nil)

// fakeStore is an in-memory Store that records every call and enforces the
// parent rules of the Store contract (ENotFound for a missing workspace,
// member, profile, seat type or token). fail, when set, is returned by
// every method.
type fakeStore struct {
	mu         sync.Mutex
	calls      []string
	fail       error
	workspaces map[string]gateway.Workspace
	members    map[[2]string]gateway.Member
	profiles   map[[2]string]gateway.Profile
	defaults   map[string]string
	wsOver     map[string]gateway.Permissions
	memberOver map[[2]string]gateway.Permissions
	seatTypes  map[string]gateway.SeatType
	orgPlans   map[string]gateway.OrgPlan
	tasks      map[[2]string]gateway.Task
	tokens     map[string]gateway.APIToken
	limits     map[string]gateway.ExternalLimits
	events     []gateway.AuditEvent
	lastFilter gateway.AuditFilter
	// profileTasks are the running tasks DeleteProfile names, by profile.
	profileTasks  map[string][]string
	lastTaskQuery [3]string // status, after, limit of the last ListTasks
}

// newFakeStore returns a store holding workspace ws-1 with member u-1
// (seat "standard"), profile p-1, org plan "team", one active token and
// one audit event.
func newFakeStore() *fakeStore {
	return &fakeStore{
		workspaces: map[string]gateway.Workspace{"ws-1": {ID: "ws-1", Name: "One", Slug: "one", OrgPlan: "team"}},
		members:    map[[2]string]gateway.Member{{"ws-1", "u-1"}: {WorkspaceID: "ws-1", UserID: "u-1", Role: "member", SeatType: "standard"}},
		profiles:   map[[2]string]gateway.Profile{{"ws-1", "p-1"}: {WorkspaceID: "ws-1", ID: "p-1", Name: "Ops", Allowlist: []string{"supacloud.ops.*"}}},
		defaults:   map[string]string{},
		wsOver:     map[string]gateway.Permissions{},
		memberOver: map[[2]string]gateway.Permissions{},
		seatTypes:  map[string]gateway.SeatType{"standard": {Name: "standard", Permissions: gateway.Permissions{}}},
		orgPlans:   map[string]gateway.OrgPlan{"team": {Name: "team", Permissions: gateway.Permissions{}}},
		tasks:      map[[2]string]gateway.Task{},
		tokens: map[string]gateway.APIToken{"0123456789abcdef": {Fingerprint: "0123456789abcdef", WorkspaceID: "ws-1",
			Label: "ci", Scopes: []string{"mcp:read"}, Status: TokenActive, Hash: "secret-hash-value"}},
		limits: map[string]gateway.ExternalLimits{},
		events: []gateway.AuditEvent{{ID: 1, WorkspaceID: "ws-1", Tool: "workspace.info", Status: "allowed", Kind: gateway.AuditKindToolCall}},
	}
}

// begin records a call and returns the injected failure, if any.
func (s *fakeStore) begin(name string) error {
	s.calls = append(s.calls, name)
	return s.fail
}

func (s *fakeStore) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *fakeStore) needWorkspace(id string) error {
	if _, ok := s.workspaces[id]; !ok {
		return gateway.Errorf(gateway.ENotFound, "workspace %q not found; create it with PUT /admin/v1/workspaces/%s", id, id)
	}
	return nil
}

func (s *fakeStore) PutWorkspace(_ context.Context, w *gateway.Workspace) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutWorkspace"); err != nil {
		return err
	}
	w.FlowRules = s.workspaces[w.ID].FlowRules // a replace keeps the switch, as the stores do
	s.workspaces[w.ID] = *w
	return nil
}

func (s *fakeStore) PutMember(_ context.Context, m *gateway.Member) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutMember"); err != nil {
		return err
	}
	if err := s.needWorkspace(m.WorkspaceID); err != nil {
		return err
	}
	if _, ok := s.seatTypes[m.SeatType]; m.SeatType != "" && !ok {
		return gateway.Errorf(gateway.ENotFound, "seat type %q not found", m.SeatType)
	}
	s.members[[2]string{m.WorkspaceID, m.UserID}] = *m
	return nil
}

func (s *fakeStore) PutProfile(_ context.Context, p *gateway.Profile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutProfile"); err != nil {
		return err
	}
	if err := s.needWorkspace(p.WorkspaceID); err != nil {
		return err
	}
	s.profiles[[2]string{p.WorkspaceID, p.ID}] = *p
	return nil
}

func (s *fakeStore) SetDefaultProfile(_ context.Context, ws string, id *string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("SetDefaultProfile"); err != nil {
		return err
	}
	if err := s.needWorkspace(ws); err != nil {
		return err
	}
	if id == nil {
		delete(s.defaults, ws)
		return nil
	}
	if _, ok := s.profiles[[2]string{ws, *id}]; !ok {
		return gateway.Errorf(gateway.ENotFound, "profile %q not found in workspace %q", *id, ws)
	}
	s.defaults[ws] = *id
	return nil
}

func (s *fakeStore) PutWorkspaceOverrides(_ context.Context, ws string, p gateway.Permissions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutWorkspaceOverrides"); err != nil {
		return err
	}
	if err := s.needWorkspace(ws); err != nil {
		return err
	}
	s.wsOver[ws] = p
	return nil
}

func (s *fakeStore) PutMemberOverrides(_ context.Context, ws, user string, p gateway.Permissions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutMemberOverrides"); err != nil {
		return err
	}
	if _, ok := s.members[[2]string{ws, user}]; !ok {
		return gateway.Errorf(gateway.ENotFound, "member %q not found in workspace %q", user, ws)
	}
	s.memberOver[[2]string{ws, user}] = p
	return nil
}

func (s *fakeStore) PutSeatType(_ context.Context, st *gateway.SeatType) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutSeatType"); err != nil {
		return err
	}
	s.seatTypes[st.Name] = *st
	return nil
}

func (s *fakeStore) PutOrgPlan(_ context.Context, o *gateway.OrgPlan) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutOrgPlan"); err != nil {
		return err
	}
	s.orgPlans[o.Name] = *o
	return nil
}

func (s *fakeStore) PutTask(_ context.Context, t *gateway.Task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutTask"); err != nil {
		return err
	}
	if err := s.needWorkspace(t.WorkspaceID); err != nil {
		return err
	}
	s.tasks[[2]string{t.WorkspaceID, t.ID}] = *t
	return nil
}

func (s *fakeStore) CreateAPIToken(_ context.Context, t *gateway.APIToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("CreateAPIToken"); err != nil {
		return err
	}
	if err := s.needWorkspace(t.WorkspaceID); err != nil {
		return err
	}
	if _, dup := s.tokens[t.Fingerprint]; dup {
		return gateway.Errorf(gateway.EConflict, "token fingerprint %s exists", t.Fingerprint)
	}
	s.tokens[t.Fingerprint] = *t
	return nil
}

func (s *fakeStore) ListAPITokens(_ context.Context, ws string) ([]gateway.APIToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ListAPITokens"); err != nil {
		return nil, err
	}
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	var out []gateway.APIToken
	for _, t := range s.tokens {
		if t.WorkspaceID == ws {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *fakeStore) APIToken(_ context.Context, fp string) (*gateway.APIToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("APIToken"); err != nil {
		return nil, err
	}
	t, ok := s.tokens[fp]
	if !ok {
		return nil, gateway.Errorf(gateway.ENotFound, "no API token with fingerprint %s", fp)
	}
	t.Hash = ""
	return &t, nil
}

func (s *fakeStore) RevokeAPIToken(_ context.Context, fp string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("RevokeAPIToken"); err != nil {
		return err
	}
	t, ok := s.tokens[fp]
	if !ok {
		return gateway.Errorf(gateway.ENotFound, "no API token with fingerprint %s", fp)
	}
	t.Status = TokenRevoked
	s.tokens[fp] = t
	return nil
}

func (s *fakeStore) PutExternalLimits(_ context.Context, ws string, l gateway.ExternalLimits) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("PutExternalLimits"); err != nil {
		return err
	}
	if err := s.needWorkspace(ws); err != nil {
		return err
	}
	s.limits[ws] = l
	return nil
}

func (s *fakeStore) SetWorkspaceFlowRules(_ context.Context, ws string, on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("SetWorkspaceFlowRules"); err != nil {
		return err
	}
	if err := s.needWorkspace(ws); err != nil {
		return err
	}
	w := s.workspaces[ws]
	w.FlowRules = on
	s.workspaces[ws] = w
	return nil
}

func (s *fakeStore) ListAuditEvents(_ context.Context, f gateway.AuditFilter) ([]gateway.AuditEvent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ListAuditEvents"); err != nil {
		return nil, err
	}
	s.lastFilter = f
	var out []gateway.AuditEvent
	for _, e := range s.events {
		if f.WorkspaceID == "" || e.WorkspaceID == f.WorkspaceID {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *fakeStore) Workspace(_ context.Context, id string) (*gateway.Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("Workspace"); err != nil {
		return nil, err
	}
	if err := s.needWorkspace(id); err != nil {
		return nil, err
	}
	w := s.workspaces[id]
	return &w, nil
}

func (s *fakeStore) ListWorkspaces(_ context.Context, after string, limit int) ([]gateway.Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ListWorkspaces"); err != nil {
		return nil, err
	}
	var out []gateway.Workspace
	for _, id := range slices.Sorted(maps.Keys(s.workspaces)) {
		if id > after && len(out) < limit {
			out = append(out, s.workspaces[id])
		}
	}
	return out, nil
}

func (s *fakeStore) ListMembers(_ context.Context, ws string) ([]gateway.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ListMembers"); err != nil {
		return nil, err
	}
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	var out []gateway.Member
	for _, k := range slices.SortedFunc(maps.Keys(s.members), cmpKey) {
		if k[0] == ws {
			out = append(out, s.members[k])
		}
	}
	return out, nil
}

func cmpKey(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) }

func (s *fakeStore) Member(_ context.Context, ws, user string) (*gateway.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("Member"); err != nil {
		return nil, err
	}
	return s.member(ws, user)
}

func (s *fakeStore) member(ws, user string) (*gateway.Member, error) {
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	m, ok := s.members[[2]string{ws, user}]
	if !ok {
		return nil, gateway.Errorf(gateway.ENotFound, "member %q not found in workspace %q; add it with PUT", user, ws)
	}
	return &m, nil
}

func (s *fakeStore) DeleteMember(_ context.Context, ws, user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("DeleteMember"); err != nil {
		return err
	}
	if _, err := s.member(ws, user); err != nil {
		return err
	}
	delete(s.members, [2]string{ws, user})
	delete(s.memberOver, [2]string{ws, user})
	return nil
}

func (s *fakeStore) ListProfiles(_ context.Context, ws string) ([]gateway.Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ListProfiles"); err != nil {
		return nil, err
	}
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	var out []gateway.Profile
	for _, k := range slices.SortedFunc(maps.Keys(s.profiles), cmpKey) {
		if k[0] == ws {
			p := s.profiles[k]
			p.IsDefault = s.defaults[ws] == p.ID
			out = append(out, p)
		}
	}
	return out, nil
}

func (s *fakeStore) profile(ws, id string) (*gateway.Profile, error) {
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	p, ok := s.profiles[[2]string{ws, id}]
	if !ok {
		return nil, gateway.Errorf(gateway.ENotFound, "profile %q not found in workspace %q; create it with PUT", id, ws)
	}
	p.IsDefault = s.defaults[ws] == p.ID
	return &p, nil
}

func (s *fakeStore) Profile(_ context.Context, ws, id string) (*gateway.Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("Profile"); err != nil {
		return nil, err
	}
	return s.profile(ws, id)
}

func (s *fakeStore) DefaultProfile(_ context.Context, ws string) (*string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("DefaultProfile"); err != nil {
		return nil, err
	}
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	id, ok := s.defaults[ws]
	if !ok {
		return nil, nil
	}
	return &id, nil
}

// DeleteProfile names as running tasks those in s.profileTasks[profile].
func (s *fakeStore) DeleteProfile(_ context.Context, ws, id string) (bool, []string, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("DeleteProfile"); err != nil {
		return false, nil, 0, err
	}
	if _, err := s.profile(ws, id); err != nil {
		return false, nil, 0, err
	}
	delete(s.profiles, [2]string{ws, id})
	wasDefault := s.defaults[ws] == id
	if wasDefault {
		delete(s.defaults, ws)
	}
	tasks := s.profileTasks[id]
	return wasDefault, tasks, len(tasks), nil
}

func (s *fakeStore) WorkspaceOverrides(_ context.Context, ws string) (gateway.Permissions, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("WorkspaceOverrides"); err != nil {
		return nil, err
	}
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	return maps.Clone(s.wsOver[ws]), nil
}

func (s *fakeStore) MemberOverrides(_ context.Context, ws, user string) (gateway.Permissions, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("MemberOverrides"); err != nil {
		return nil, err
	}
	if _, err := s.member(ws, user); err != nil {
		return nil, err
	}
	return maps.Clone(s.memberOver[[2]string{ws, user}]), nil
}

func (s *fakeStore) DeleteWorkspaceOverride(_ context.Context, ws, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("DeleteWorkspaceOverride"); err != nil {
		return err
	}
	if err := s.needWorkspace(ws); err != nil {
		return err
	}
	if _, ok := s.wsOver[ws][key]; !ok {
		return gateway.Errorf(gateway.ENotFound, "workspace %s has no override for %s", ws, key)
	}
	delete(s.wsOver[ws], key)
	return nil
}

func (s *fakeStore) DeleteMemberOverride(_ context.Context, ws, user, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("DeleteMemberOverride"); err != nil {
		return err
	}
	if _, err := s.member(ws, user); err != nil {
		return err
	}
	if _, ok := s.memberOver[[2]string{ws, user}][key]; !ok {
		return gateway.Errorf(gateway.ENotFound, "member %s of workspace %s has no override for %s", user, ws, key)
	}
	delete(s.memberOver[[2]string{ws, user}], key)
	return nil
}

func (s *fakeStore) ListSeatTypes(context.Context) ([]gateway.SeatType, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ListSeatTypes"); err != nil {
		return nil, err
	}
	var out []gateway.SeatType
	for _, k := range slices.Sorted(maps.Keys(s.seatTypes)) {
		out = append(out, s.seatTypes[k])
	}
	return out, nil
}

func (s *fakeStore) SeatType(_ context.Context, name string) (*gateway.SeatType, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("SeatType"); err != nil {
		return nil, err
	}
	st, ok := s.seatTypes[name]
	if !ok {
		return nil, gateway.Errorf(gateway.ENotFound, "seat type %s not found; create it with PUT /admin/v1/seat-types/%s", name, name)
	}
	return &st, nil
}

func (s *fakeStore) DeleteSeatType(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("DeleteSeatType"); err != nil {
		return err
	}
	if _, ok := s.seatTypes[name]; !ok {
		return gateway.Errorf(gateway.ENotFound, "seat type %s not found", name)
	}
	for k, m := range s.members {
		if m.SeatType == name {
			return gateway.Errorf(gateway.EConflict, "seat type %s is still held by 1 member: %s/%s", name, k[0], k[1])
		}
	}
	delete(s.seatTypes, name)
	return nil
}

func (s *fakeStore) ListOrgPlans(context.Context) ([]gateway.OrgPlan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ListOrgPlans"); err != nil {
		return nil, err
	}
	var out []gateway.OrgPlan
	for _, k := range slices.Sorted(maps.Keys(s.orgPlans)) {
		out = append(out, s.orgPlans[k])
	}
	return out, nil
}

func (s *fakeStore) OrgPlan(_ context.Context, name string) (*gateway.OrgPlan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("OrgPlan"); err != nil {
		return nil, err
	}
	o, ok := s.orgPlans[name]
	if !ok {
		return nil, gateway.Errorf(gateway.ENotFound, "org plan %s not found; create it with PUT /admin/v1/org-plans/%s", name, name)
	}
	return &o, nil
}

func (s *fakeStore) DeleteOrgPlan(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("DeleteOrgPlan"); err != nil {
		return err
	}
	if _, ok := s.orgPlans[name]; !ok {
		return gateway.Errorf(gateway.ENotFound, "org plan %s not found", name)
	}
	for id, w := range s.workspaces {
		if w.OrgPlan == name {
			return gateway.Errorf(gateway.EConflict, "org plan %s is still used by 1 workspace: %s", name, id)
		}
	}
	delete(s.orgPlans, name)
	return nil
}

func (s *fakeStore) Task(_ context.Context, ws, id string) (*gateway.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("Task"); err != nil {
		return nil, err
	}
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	t, ok := s.tasks[[2]string{ws, id}]
	if !ok {
		return nil, gateway.Errorf(gateway.ENotFound, "task %s not found in workspace %s; create it with PUT", id, ws)
	}
	return &t, nil
}

func (s *fakeStore) ListTasks(_ context.Context, ws, status, after string, limit int) ([]gateway.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ListTasks"); err != nil {
		return nil, err
	}
	if err := s.needWorkspace(ws); err != nil {
		return nil, err
	}
	s.lastTaskQuery = [3]string{status, after, strconv.Itoa(limit)}
	var out []gateway.Task
	for _, k := range slices.SortedFunc(maps.Keys(s.tasks), cmpKey) {
		t := s.tasks[k]
		if k[0] == ws && (status == "" || t.Status == status) && t.ID > after && len(out) < limit {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *fakeStore) ExternalLimits(_ context.Context, ws string) (gateway.ExternalLimits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin("ExternalLimits"); err != nil {
		return gateway.ExternalLimits{}, err
	}
	if err := s.needWorkspace(ws); err != nil {
		return gateway.ExternalLimits{}, err
	}
	return s.limits[ws], nil
}
