package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

var tokenTests = []test{
	{"CreateListRevoke", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		tokens := []*gateway.APIToken{
			{Fingerprint: "fp-1", WorkspaceID: "ws-a", Label: "ci", Scopes: []string{"mcp:read"}, Hash: "h1", CreatedAt: t0},
			{Fingerprint: "fp-2", WorkspaceID: "ws-a", Label: "ops", Scopes: []string{"mcp:read", "mcp:ops"}, Hash: "h2",
				CreatedAt: t0.Add(time.Minute)},
			{Fingerprint: "fp-3", WorkspaceID: "ws-b", Label: "other", Scopes: nil, Hash: "h3"},
		}
		for _, tok := range tokens {
			must(t, s.CreateAPIToken(ctx(t), tok), "create "+tok.Fingerprint)
			if tok.Status != "active" || tok.CreatedAt.IsZero() {
				t.Errorf("%s: status %q created %v, want active and a creation time", tok.Fingerprint, tok.Status, tok.CreatedAt)
			}
		}
		list, err := s.ListAPITokens(ctx(t), "ws-a")
		must(t, err, "list")
		if got := fingerprints(list); !slices.Equal(got, []string{"fp-1", "fp-2"}) {
			t.Fatalf("ws-a tokens = %v, want [fp-1 fp-2] oldest first", got)
		}
		first := list[0]
		if first.Label != "ci" || !slices.Equal(first.Scopes, []string{"mcp:read"}) || first.Status != "active" ||
			!first.CreatedAt.Equal(t0) || first.LastUsedAt != nil || first.WorkspaceID != "ws-a" {
			t.Errorf("listed token = %+v", first)
		}
		if first.Hash != "" {
			t.Error("ListAPITokens returned a token hash; listings must not carry it")
		}

		must(t, s.RevokeAPIToken(ctx(t), "fp-1"), "revoke")
		must(t, s.RevokeAPIToken(ctx(t), "fp-1"), "revoke twice")
		wantCode(t, s.RevokeAPIToken(ctx(t), "fp-9"), gateway.ENotFound, "revoke unknown")
		list, err = s.ListAPITokens(ctx(t), "ws-a")
		must(t, err, "list after revoke")
		if list[0].Status != "revoked" || list[1].Status != "active" {
			t.Errorf("statuses after revoking fp-1 = %s, %s; want revoked, active", list[0].Status, list[1].Status)
		}
		if got, _ := s.APITokenByHash(ctx(t), "h1"); got == nil || got.Status != "revoked" {
			t.Errorf("lookup of revoked token = %+v, want status revoked", got)
		}
		got, err := s.APIToken(ctx(t), "fp-2")
		must(t, err, "read fp-2")
		if got.Fingerprint != "fp-2" || got.WorkspaceID != "ws-a" || got.Label != "ops" || got.Status != "active" ||
			!slices.Equal(got.Scopes, []string{"mcp:read", "mcp:ops"}) || got.Hash != "" {
			t.Errorf("APIToken(fp-2) = %+v, want ops of ws-a, active, without its hash", got)
		}
		if got, err := s.APIToken(ctx(t), "fp-1"); err != nil || got.Status != "revoked" {
			t.Errorf("APIToken(fp-1) = %+v, %v; want it revoked", got, err)
		}
		_, err = s.APIToken(ctx(t), "fp-9")
		wantCode(t, err, gateway.ENotFound, "read unknown")
	}},
	{"CreateRefusals", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		must(t, s.CreateAPIToken(ctx(t), &gateway.APIToken{Fingerprint: "fp-1", WorkspaceID: "ws-a", Hash: "h1"}), "create")
		for _, tc := range []struct {
			name string
			tok  gateway.APIToken
			code gateway.ErrorCode
		}{
			{"duplicate fingerprint", gateway.APIToken{Fingerprint: "fp-1", WorkspaceID: "ws-a", Hash: "h2"}, gateway.EConflict},
			{"duplicate hash", gateway.APIToken{Fingerprint: "fp-2", WorkspaceID: "ws-a", Hash: "h1"}, gateway.EConflict},
			{"unknown workspace", gateway.APIToken{Fingerprint: "fp-3", WorkspaceID: "ws-9", Hash: "h3"}, gateway.ENotFound},
			{"bad status", gateway.APIToken{Fingerprint: "fp-4", WorkspaceID: "ws-a", Hash: "h4", Status: "paused"}, gateway.EInvalid},
			{"empty hash", gateway.APIToken{Fingerprint: "fp-5", WorkspaceID: "ws-a", Hash: ""}, gateway.EInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) { wantCode(t, s.CreateAPIToken(ctx(t), &tc.tok), tc.code, "CreateAPIToken") })
		}
		list, err := s.ListAPITokens(ctx(t), "ws-a")
		must(t, err, "list")
		if got := fingerprints(list); !slices.Equal(got, []string{"fp-1"}) {
			t.Errorf("tokens after refused creates = %v, want [fp-1]", got)
		}
	}},
	{"ListOfEmptyAndUnknownWorkspace", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		list, err := s.ListAPITokens(ctx(t), "ws-a")
		must(t, err, "list of empty workspace")
		if list == nil || len(list) != 0 {
			t.Errorf("tokens of empty workspace = %#v, want an empty, non-nil list", list)
		}
		_, err = s.ListAPITokens(ctx(t), "ws-9")
		wantCode(t, err, gateway.ENotFound, "list of unknown workspace")
	}},
	{"LookupAndTouch", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		must(t, s.CreateAPIToken(ctx(t), &gateway.APIToken{Fingerprint: "fp-1", WorkspaceID: "ws-a",
			Scopes: []string{"mcp:read"}, Hash: "h1"}), "create")
		got, err := s.APITokenByHash(ctx(t), "h1")
		must(t, err, "lookup")
		if got.Fingerprint != "fp-1" || got.Hash != "h1" || got.WorkspaceID != "ws-a" || got.LastUsedAt != nil {
			t.Errorf("lookup = %+v", got)
		}
		_, err = s.APITokenByHash(ctx(t), "nope")
		wantCode(t, err, gateway.ENotFound, "lookup of unknown hash")

		at := time.Date(2025, 6, 1, 12, 0, 0, 123456000, time.UTC)
		must(t, s.TouchAPIToken(ctx(t), "fp-1", at), "touch")
		must(t, s.TouchAPIToken(ctx(t), "fp-1", at.Add(-time.Hour)), "touch with an older time")
		wantCode(t, s.TouchAPIToken(ctx(t), "fp-9", at), gateway.ENotFound, "touch unknown")
		got, err = s.APITokenByHash(ctx(t), "h1")
		must(t, err, "lookup after touch")
		if got.LastUsedAt == nil || !got.LastUsedAt.Equal(at) {
			t.Errorf("last_used_at = %v, want %v (never moved backwards)", got.LastUsedAt, at)
		}
	}},
}

// fingerprints lists the tokens' fingerprints in order.
func fingerprints(list []gateway.APIToken) []string {
	var out []string
	for _, t := range list {
		out = append(out, t.Fingerprint)
	}
	return out
}
