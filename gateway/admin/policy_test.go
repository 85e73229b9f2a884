package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
)

// fakePolicy is a Policy over a folder (dir; "" is the embedded bundle,
// which never reloads) whose reloads pass, or are refused with refuse.
type fakePolicy struct {
	dir     string
	refuse  string
	reloads int
	status  policystatus.Status
}

func (f *fakePolicy) Status() policystatus.Status {
	if f.status.Surface == "" {
		src := f.dir
		if src == "" {
			src = "embedded"
		}
		f.status = policystatus.Status{Surface: "supacloud", Revision: "rev-1", Source: src, Watched: f.dir != "", LiveSince: testNow,
			Shadow: &policystatus.Shadow{Source: "/etc/mcpgate/shadow", Revision: "rev-9"}}
	}
	return f.status
}

func (f *fakePolicy) Reload(_ context.Context, trigger string) (*policystatus.Attempt, error) {
	if f.dir == "" {
		return nil, gateway.Errorf(gateway.EConflict, "the gateway serves its embedded policy bundle, which never reloads")
	}
	f.reloads++
	st := f.Status()
	at := &policystatus.Attempt{Time: testNow.Add(time.Minute), Trigger: trigger, Revision: "rev-2", Outcome: policystatus.Live, Tests: 3}
	if f.refuse != "" {
		at.Outcome, at.Tests, at.Error = policystatus.Refused, 0, f.refuse
		st.LastFailure = at
		f.status = st
		return at, errors.New(f.refuse)
	}
	st.Revision, st.LastAttempt = "rev-2", at
	f.status = st
	return at, nil
}

func TestPolicyReload(t *testing.T) {
	for _, tc := range []struct {
		note   string
		policy *fakePolicy
		status int
		want   string // the outcome, or the error code
	}{
		{"a passing candidate goes live", &fakePolicy{dir: "/p"}, http.StatusOK, policystatus.Live},
		{"a refused candidate shows OPA's message", &fakePolicy{dir: "/p", refuse: "rego_parse_error: unexpected eof"}, http.StatusUnprocessableEntity, "PolicyRefused"},
		{"the embedded bundle never reloads", &fakePolicy{}, http.StatusConflict, "Conflict"},
	} {
		t.Run(tc.note, func(t *testing.T) {
			h := NewHandler(newFakeStore(), Options{Token: adminToken, Policy: tc.policy})
			rec := serve(h, http.MethodPost, "/admin/v1/policy/reload", "", nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			var body struct {
				Attempt *policystatus.Attempt `json:"attempt"`
				Status  *policystatus.Status  `json:"status"`
				Error   struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			switch tc.status {
			case http.StatusOK:
				if body.Attempt.Outcome != tc.want || body.Attempt.Trigger != "admin" || body.Status.Revision != "rev-2" {
					t.Errorf("reply %s: want outcome %s by trigger admin and the new revision live", rec.Body, tc.want)
				}
			case http.StatusUnprocessableEntity:
				if body.Error.Code != tc.want || body.Error.Message != tc.policy.refuse || body.Status.Revision != "rev-1" ||
					body.Status.LastFailure == nil || body.Status.LastFailure.Error != tc.policy.refuse {
					t.Errorf("reply %s: want code %s, OPA's message, rev-1 still live and the failure in the status", rec.Body, tc.want)
				}
			default:
				if body.Error.Code != tc.want {
					t.Errorf("reply %s: want code %s", rec.Body, tc.want)
				}
			}
		})
	}
}

// A management:read API token reads its workspace, not the policy: only
// the admin token sees and reloads it.
func TestPolicyIsAdminOnly(t *testing.T) {
	p := &fakePolicy{dir: "/p"}
	h := NewHandler(newFakeStore(), Options{Token: adminToken, Policy: p,
		TokenReader: func(r *http.Request) (string, bool) {
			return "ws-1", r.Header.Get("Authorization") == "Bearer scmt_reader"
		}})
	reader := "Bearer scmt_reader"
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		path := "/admin/v1/policy"
		if m == http.MethodPost {
			path += "/reload"
		}
		if rec := serve(h, m, path, "", &reader); rec.Code != http.StatusForbidden {
			t.Errorf("%s %s with a read-only token: status %d, want 403: %s", m, path, rec.Code, rec.Body)
		}
	}
	if p.reloads != 0 {
		t.Errorf("a read-only token reloaded the policy %d times", p.reloads)
	}
}

// GET /policy shows the shadow candidate's revision and its flips counted
// since start, per tool and direction; with none, flips is [] (never null).
func TestPolicyStatusShowsShadowFlips(t *testing.T) {
	since := testNow.Add(-time.Hour)
	p := &fakePolicy{dir: "/p", status: policystatus.Status{Surface: "supacloud", Revision: "rev-1", Source: "/p", LiveSince: testNow,
		Shadow: &policystatus.Shadow{Source: "/s", Revision: "rev-9", FlipsSince: since}}}
	h := NewHandler(newFakeStore(), Options{Token: adminToken, Policy: p})
	rec := serve(h, http.MethodGet, "/admin/v1/policy", "", nil)
	if rec.Code != http.StatusOK || !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("GET /policy: %d %s", rec.Code, rec.Body)
	}
	var body struct {
		Shadow struct {
			Revision   string          `json:"revision"`
			FlipsSince time.Time       `json:"flips_since"`
			Flips      json.RawMessage `json:"flips"`
		} `json:"shadow"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if string(body.Shadow.Flips) != "[]" || body.Shadow.Revision != "rev-9" || !body.Shadow.FlipsSince.Equal(since) {
		t.Errorf("shadow with no flips: %s; want revision rev-9, flips [] since %v", rec.Body, since)
	}
	p.status.Shadow.Flips = []policystatus.ShadowFlips{{Tool: "apps.deploy", Direction: "allow_to_deny", Count: 3}, {Tool: "project.get", Direction: "deny_to_allow", Count: 1}}
	rec = serve(h, http.MethodGet, "/admin/v1/policy", "", nil)
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if want := `[{"tool":"apps.deploy","direction":"allow_to_deny","count":3},{"tool":"project.get","direction":"deny_to_allow","count":1}]`; string(body.Shadow.Flips) != want {
		t.Errorf("flips = %s; want %s", body.Shadow.Flips, want)
	}
}
