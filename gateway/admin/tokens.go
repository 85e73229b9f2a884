package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/mcpgate/mcpgate/gateway"
)

// TokenPrefix starts every external-gateway API token value
// (docs/requirements.md#api-tokens).
const TokenPrefix = "scmt_"

// The scopes an API token may carry (docs/requirements.md#api-tokens).
const (
	ScopeMCPRead        = "mcp:read"
	ScopeMCPOps         = "mcp:ops"
	ScopeManagementRead = "management:read"
)

// Scopes lists every valid scope, in the order docs/requirements.md#api-tokens presents them.
var Scopes = []string{ScopeMCPRead, ScopeMCPOps, ScopeManagementRead}

// Token statuses stored in gateway.APIToken.Status.
const (
	TokenActive  = "active"
	TokenRevoked = "revoked"
)

// HashToken returns the lower-case hex SHA-256 of a token value (64
// characters): the only form of the value the store keeps. The scmt_
// authenticator hashes presented tokens the same way to look them up.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Fingerprint returns the first 16 hex characters of HashToken(token): the
// public handle shown in listings and used to revoke (docs/requirements.md#api-tokens).
func Fingerprint(token string) string {
	return HashToken(token)[:16]
}

// NewAPIToken mints a token value (scmt_ + 43 base64url characters from 32
// bytes of crypto/rand) and its stored record (active, hash and
// fingerprint set, CreatedAt now). The value is returned once and never
// stored. Callers validate label and scopes first.
func NewAPIToken(workspaceID, label string, scopes []string, now time.Time) (string, *gateway.APIToken) {
	value := TokenPrefix + base64.RawURLEncoding.EncodeToString(randomBytes(32))
	return value, &gateway.APIToken{
		Fingerprint: Fingerprint(value),
		WorkspaceID: workspaceID,
		Label:       label,
		Scopes:      scopes,
		Status:      TokenActive,
		Hash:        HashToken(value),
		CreatedAt:   now.UTC(),
	}
}

// randomBytes reads n bytes from crypto/rand, which never fails since Go
// 1.24 (it crashes the program instead of returning weak randomness).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// createToken: POST /workspaces/{ws}/api-tokens {"label","scopes":[…]} →
// 201 {"token","fingerprint"}; the only reply that carries the value.
func (h *handler) createToken(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	var in struct {
		Label  string   `json:"label"`
		Scopes []string `json:"scopes"`
	}
	if err := h.decode(w, r, &in); err != nil {
		return err
	}
	scopes, err := checkScopes(in.Label, in.Scopes)
	if err != nil {
		return err
	}
	value, rec := NewAPIToken(ids[0], in.Label, scopes, h.opts.Now())
	if err := h.store.CreateAPIToken(r.Context(), rec); err != nil {
		return err
	}
	h.log.Info("admin change", logChange(r)...)
	writeJSON(w, http.StatusCreated, map[string]string{"token": value, "fingerprint": rec.Fingerprint})
	return nil
}

// checkScopes validates label and scopes and returns the scopes without
// duplicates, in the order given.
func checkScopes(label string, scopes []string) ([]string, error) {
	if err := checkText("label", label); err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		return nil, invalid("field \"scopes\" is required; send one or more of %s", strings.Join(Scopes, ", "))
	}
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if !slices.Contains(Scopes, s) {
			return nil, invalid("scope %q is unknown; use %s", clip(s), strings.Join(Scopes, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// listTokens: GET /workspaces/{ws}/api-tokens → {"tokens":[…]} with
// label, scopes, status, fingerprint, created_at, last_used_at; never the
// value or hash.
func (h *handler) listTokens(w http.ResponseWriter, r *http.Request) error {
	ids, err := pathIDs(r, "ws")
	if err != nil {
		return err
	}
	tokens, err := h.store.ListAPITokens(r.Context(), ids[0])
	if err != nil {
		return err
	}
	if tokens == nil {
		tokens = []gateway.APIToken{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": tokens})
	return nil
}

// getToken: GET /api-tokens/{fingerprint} → the token as listings show
// it (label, scopes, status, fingerprint, created_at, last_used_at; never
// the value or hash), revoked ones included. It is also what an audited
// revocation records as its before and after.
func (h *handler) getToken(w http.ResponseWriter, r *http.Request) error {
	fp, err := h.pathToken(r)
	if err != nil {
		return err
	}
	t, err := h.store.APIToken(r.Context(), fp)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// revokeToken: DELETE /api-tokens/{fingerprint} → 204; the token stops
// working at once (docs/requirements.md#api-tokens).
func (h *handler) revokeToken(w http.ResponseWriter, r *http.Request) error {
	fp, err := h.pathToken(r)
	if err != nil {
		return err
	}
	if err := h.store.RevokeAPIToken(r.Context(), fp); err != nil {
		return err
	}
	h.log.Info("admin change", logChange(r)...)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pathToken is the {fingerprint} of r's path, checked: its form, and for
// a workspace admin that the token is its workspace's (ownToken).
func (h *handler) pathToken(r *http.Request) (string, error) {
	fp := mux.Vars(r)["fingerprint"]
	if !fingerprintPattern.MatchString(fp) {
		return "", invalid("fingerprint %q is not valid; use the 16 lower-case hex characters shown by GET /admin/v1/workspaces/{ws}/api-tokens", clip(fp))
	}
	if wa, ok := workspaceAdminOf(r.Context()); ok {
		if err := h.ownToken(r, wa, fp); err != nil {
			return "", err
		}
	}
	return fp, nil
}

// ownToken refuses a workspace admin reading or revoking a token outside its
// workspace. An unknown fingerprint is refused the same way, so the reply
// does not tell whether another workspace holds it.
func (h *handler) ownToken(r *http.Request, wa *workspaceAdmin, fp string) error {
	t, err := h.store.APIToken(r.Context(), fp)
	if err != nil && gateway.ErrorCodeOf(err) != gateway.ENotFound {
		return err
	}
	if err != nil || t.WorkspaceID != wa.workspaceID {
		return gateway.Errorf(gateway.EForbidden, "workspace %q has no API token with fingerprint %s; as its %s you may read or revoke only its own tokens (GET /admin/v1/workspaces/%s/api-tokens lists them)",
			wa.workspaceID, fp, wa.role, wa.workspaceID)
	}
	return nil
}
