package admin

import (
	"context"
	"slices"
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
		events: []gateway.AuditEvent{{ID: 1, WorkspaceID: "ws-1", Tool: "workspace.info", Status: "allowed"}},
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
