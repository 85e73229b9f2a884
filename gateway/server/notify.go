package server

import (
	"context"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/gateway/replica"
)

// Changes returns the coordinator a replica.Feed delivers this replica's
// announcements to (replica.Coordinator): it drops the cached callers of
// a change's workspace and tells that workspace's open streams, ends the
// sessions of a revoked token, and keeps the session-end cache current.
func (s *Server) Changes() *replica.Coordinator { return s.changes }

var _ replica.Replica = (*Server)(nil)

// TokenRevoked ends, on this replica, every MCP session and stream opened
// with the API token of fingerprint fp once the store no longer holds that
// token active (revoked or removed; a store that cannot tell counts as
// revoked): their next request authenticates again and is refused (every
// request looks the token up; there is no token cache to drop). The
// announcement alone is not believed: anyone who may connect to the
// database can send one on mcpgate_changes, and ending an active token's
// sessions would cancel their running calls. The admin API of this
// process calls it after a revocation, and the change feed for
// revocations made elsewhere.
func (s *Server) TokenRevoked(fp string) {
	ctx, cancel := context.WithTimeout(context.Background(), tokenCheckTimeout)
	defer cancel()
	active := map[string]bool{} // by the sessions' workspace, the token's own
	match := func(p *gateway.Principal) bool {
		if p.TokenFingerprint != fp {
			return false
		}
		a, ok := active[p.WorkspaceID]
		if !ok {
			a = s.tokenActive(ctx, p.WorkspaceID, fp)
			active[p.WorkspaceID] = a
		}
		return !a
	}
	s.surface.DropSessions(match)
}

// tokenCheckTimeout bounds TokenRevoked's look-up of the token's status.
const tokenCheckTimeout = 2 * time.Second

// tokenActive reports whether the store holds the API token fp of
// workspace ws with the status active.
func (s *Server) tokenActive(ctx context.Context, ws, fp string) bool {
	st, ok := s.store.(interface {
		ListAPITokens(ctx context.Context, workspaceID string) ([]gateway.APIToken, error)
	})
	if !ok {
		return false
	}
	tokens, err := st.ListAPITokens(ctx, ws)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(tokens, func(t gateway.APIToken) bool { return t.Fingerprint == fp && t.Status == admin.TokenActive })
}

// announce applies a change made through this process's admin API at
// once (on PostgreSQL the change triggers announce it to every replica as
// well, this one included).
func (s *Server) announce(ch gateway.Change) { s.changes.Announce(ch) }

// revokeAnnouncer is the admin API's store: a successful revocation is
// announced to this process at once.
type revokeAnnouncer struct {
	FullStore
	s *Server
}

func (r revokeAnnouncer) RevokeAPIToken(ctx context.Context, fingerprint string) error {
	if err := r.FullStore.RevokeAPIToken(ctx, fingerprint); err != nil {
		return err
	}
	r.s.announce(gateway.Change{Table: "api_tokens", TokenFingerprint: fingerprint})
	return nil
}

// The replicas' session ends and relayed answers are the transport's.
var (
	_ mcp.SessionEnds  = (*replica.SessionEndCache)(nil)
	_ mcp.SessionEnds  = replica.StoreEnds{}
	_ mcp.RelayAnswers = (*replica.Answers)(nil)
)
