// Package consolesession is a signed-in console visitor as the audit store
// keeps it, so every replica serves the visitor (no sticky sessions) and a
// restart keeps them. The console (gateway/console) makes and reads these
// records; the stores keep them (gateway/internal/sqlcore, console.go). It
// imports only the standard library, so the stores do not link the
// console.
package consolesession

import "time"

// Kind says how a console visitor signed in.
type Kind string

// The console's principal kinds (the console's package doc, docs/http.md).
const (
	// Admin signed in with MCPGATE_ADMIN_TOKEN.
	Admin Kind = "admin"
	// Reader signed in with an scmt_ token holding management:read: it
	// reads only its workspace.
	Reader Kind = "reader"
	// WorkspaceAdmin signed in with a console sign-in JWT of a workspace
	// member; the admin API lets it create, list and revoke its
	// workspace's API tokens while its role is owner or admin
	// (docs/requirements.md#api-tokens).
	WorkspaceAdmin Kind = "workspace_admin"
)

// MaxPerPrincipal bounds the sessions one principal (kind, workspace and
// subject: the operator, one workspace's read-only sign-ins, one workspace
// admin) keeps in the audit store: a sign-in beyond it ends that
// principal's oldest sessions, so a valid credential signing in again and
// again cannot fill the table (failed sign-ins are limited by the console
// itself).
const MaxPerPrincipal = 64

// Session is one signed-in console visitor. It holds no secret the store
// could use alone: the store never sees the session cookie's value, only
// IDHash, and never the visitor's credential in clear: SealedToken and
// Flash are sealed (AES-256-GCM) under a key derived (HKDF-SHA256) from the
// cookie value, which only the visitor's browser holds.
type Session struct {
	// IDHash is the lower-case hex SHA-256 of the cookie value (64
	// characters): the row's key.
	IDHash string
	Kind   Kind
	// WorkspaceID is the workspace a reader or workspace admin is bound
	// to; "" for Admin.
	WorkspaceID string
	// Subject is a workspace admin's user id; "" otherwise.
	Subject string
	// Operator is the name given at sign-in (decided_by of approvals).
	Operator string
	// CSRF is the secret every form of the session carries.
	CSRF string
	// SealedToken is the credential, sealed with the key derived from the
	// cookie value.
	SealedToken []byte
	// Flash is a created API token on its way to the one page that shows
	// it, sealed like SealedToken; nil when none.
	Flash     []byte
	CreatedAt time.Time
	// ExpiresAt ends the session; reads after it find nothing.
	ExpiresAt time.Time
}
