package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replicas opens n gateways on one database, as n replicas of a deployment
// share it: each its own App (pools, caches, policy engine, transport
// sessions), only the store in common. The first seeds the fixtures.
func replicas(t *testing.T, dbURL string, n int, env map[string]string) []*gatewayUnderTest {
	t.Helper()
	gs := make([]*gatewayUnderTest, n)
	for i := range gs {
		gs[i] = startGateway(t, dbURL, env)
	}
	return gs
}

// stop closes g before the test ends, as a replica that is shut down.
func (g *gatewayUnderTest) stop(t *testing.T) {
	t.Helper()
	g.srv.Close()
	must(t, g.app.Close())
}

// The workspace ops/day cap of docs/requirements.md#external-limits, shared by in-app agents and
// coordinators, held by the store: half of it used by an agent and half by
// a coordinator, each on a replica of its own, refuses both on both
// replicas; a token's hourly ops quota used up on one replica is used up on
// the other; and after every replica restarts the counts are unchanged.
func TestCoordinatorLimitsAcrossReplicas(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			url := dbURL(t)
			env := map[string]string{"AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT": "4"}
			gs := replicas(t, url, 2, env)
			ids := seedFixtures(t, gs[0])["ws-a"]
			pause := map[string]any{"schedule_id": ids["$schedule"]}
			putExternalLimits(t, gs[1], "ws-a", `{"ops_per_token_hourly":50}`)
			tok, _ := createToken(t, gs[1], "ws-a", "coord", "mcp:ops")
			agentTok := gs[0].token(t, "ws-a", "mia", "task-ws-a", "operator")
			agent := gs[0].connect(t, agentTok)
			coord := gs[1].connectAt(t, apiPath, tok)
			for i, cs := range []*mcp.ClientSession{agent, coord, agent, coord} {
				if msg := callRefusal(t, cs, "schedule.pause", pause); msg != "" {
					t.Fatalf("ops call %d refused: %s", i+1, msg)
				}
			}
			want := "Workspace daily limit reached for this MCP tool tier (4/4)"
			refusedEverywhere := func(gs []*gatewayUnderTest) {
				t.Helper()
				for i, g := range gs {
					for who, cs := range map[string]*mcp.ClientSession{
						"coordinator": g.connectAt(t, apiPath, tok),
						"agent":       g.connect(t, agentTok),
					} {
						if msg := callRefusal(t, cs, "schedule.resume", pause); !contains(msg, want) {
							t.Errorf("%s on replica %d after the shared cap: %q, want %q", who, i+1, msg, want)
						}
					}
				}
			}
			refusedEverywhere(gs)

			// A token's hourly ops quota is the store's too (the daily cap
			// of ws-c is untouched).
			putExternalLimits(t, gs[0], "ws-c", `{"ops_per_token_hourly":2}`)
			cTok, _ := createToken(t, gs[0], "ws-c", "c", "mcp:ops")
			cPause := map[string]any{"schedule_id": firstID(t, gs[0], "ws-c", "schedules.list", "schedules")}
			for i, g := range gs {
				if msg := callRefusal(t, g.connectAt(t, apiPath, cTok), "schedule.pause", cPause); msg != "" {
					t.Fatalf("ws-c ops call %d on replica %d refused: %s", i+1, i+1, msg)
				}
			}
			wantToken := "Token hourly limit reached for this MCP tool tier (2/2)"
			for i, g := range gs {
				if msg := callRefusal(t, g.connectAt(t, apiPath, cTok), "schedule.pause", cPause); !contains(msg, wantToken) {
					t.Errorf("ws-c third ops call on replica %d: %q, want %q", i+1, msg, wantToken)
				}
			}

			for _, g := range gs {
				g.stop(t)
			}
			refusedEverywhere(replicas(t, url, 2, env))
		})
	}
}

// Revoking a token ends it at once for an open session of a real MCP client:
// on the replica that revoked it and on another one sharing the database
// (docs/requirements.md#api-tokens: within 1 s on every replica; token lookups are not cached).
func TestCoordinatorRevokeAcrossReplicas(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			gs := replicas(t, dbURL(t), 2, nil)
			seedFixtures(t, gs[0])
			tok, fp := createToken(t, gs[0], "ws-a", "short-lived", "mcp:read")
			sessions := []*mcp.ClientSession{gs[0].connectAt(t, apiPath, tok), gs[1].connectAt(t, apiPath, tok)}
			for i, cs := range sessions {
				if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run.list", Arguments: map[string]any{}}); err != nil || res.IsError {
					t.Fatalf("replica %d before revoke: %v %+v", i+1, err, res)
				}
			}
			if st, body := adminDo(t, gs[0], http.MethodDelete, "/api-tokens/"+fp, "e2e-admin-token", ""); st != http.StatusNoContent {
				t.Fatalf("revoke: %d %s", st, body)
			}
			revoked := time.Now()
			for i, cs := range sessions {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run.list", Arguments: map[string]any{}})
				// The Go SDK reports a 401 by its status text.
				if err == nil || !contains(err.Error(), "Unauthorized") {
					t.Errorf("replica %d: the next call after revoke: %v, want HTTP 401", i+1, err)
				}
			}
			if d := time.Since(revoked); d > time.Second {
				t.Errorf("the refusals took %s after the revoke, want within 1 s", d)
			}
			// The 401 says why, for whoever reads the raw reply.
			s := &rawSession{t: t, url: gs[1].srv.URL + apiPath, token: tok}
			if r := s.post(callBody("run.list", `{}`)); r.status != http.StatusUnauthorized || r.Error == nil || !contains(r.Error.Message, "revoked") {
				t.Errorf("raw call on replica 2 after revoke: %d %+v, want 401 saying revoked", r.status, r.Error)
			}
		})
	}
}
