package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
)

type readerKey struct{}

// authenticate accepts the admin token (compared in constant time over
// SHA-256 digests, so neither content nor length leaks) or, through
// Options.TokenReader, a read-only workspace token for GETs.
func (h *handler) authenticate(r *http.Request) (*http.Request, error) {
	token, ok := bearer(r)
	if ok && h.opts.Token != "" && h.isAdminToken(token) {
		return r, nil
	}
	if h.opts.TokenReader != nil {
		if ws, ok := h.opts.TokenReader(r); ok {
			if r.Method != http.MethodGet {
				return r, gateway.Errorf(gateway.EForbidden, "API tokens may only read the admin API (GET); changes need %s", EnvAdminToken)
			}
			return r.WithContext(context.WithValue(r.Context(), readerKey{}, ws)), nil
		}
	}
	if !ok {
		return r, gateway.Errorf(gateway.EUnauthenticated, "missing Authorization: Bearer header; send Authorization: Bearer $%s", EnvAdminToken)
	}
	return r, gateway.Errorf(gateway.EUnauthenticated, "admin token not accepted; send Authorization: Bearer $%s", EnvAdminToken)
}

func (h *handler) isAdminToken(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], h.tokenHash[:]) == 1
}

// bearer returns the token of "Authorization: Bearer <token>" (scheme
// case-insensitive, RFC 7235) and whether one was sent.
func bearer(r *http.Request) (string, bool) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	return token, strings.EqualFold(scheme, "Bearer") && token != ""
}

// readerWorkspace returns the workspace of a read-only token caller, and
// false for the admin token (which may read every workspace).
func readerWorkspace(ctx context.Context) (string, bool) {
	ws, ok := ctx.Value(readerKey{}).(string)
	return ws, ok
}

// checkReader refuses a read-only token caller reading another workspace.
func checkReader(ctx context.Context, workspaceID string) error {
	if ws, ok := readerWorkspace(ctx); ok && ws != workspaceID {
		return gateway.Errorf(gateway.EForbidden, "this API token belongs to workspace %q; it can read only that workspace", ws)
	}
	return nil
}
