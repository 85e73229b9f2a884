package auth

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/gateway"
)

// The cc_server surface (docs/requirements.md#cc-registry) takes JWTs signed with the agent
// session key (MCPGATE_JWT_SECRET or MCPGATE_JWT_PUBLIC_KEY_FILE, the same
// MCPGATE_JWT_ISSUER) but with an audience of its own
// (MCPGATE_CCSERVER_JWT_AUDIENCE, default "mcpgate-ccserver"), so that a
// SupaCloud agent token is never a cc_server token and the other way round.
// Claims (docs/http.md, "cc_server JWT"):
//
//	sub           the acting user (required)
//	mode          chat | plan | review | orchestrate; absent: chat. Any other
//	              value is kept, and the policy refuses every tool for it.
//	workspace_id  set for an agent the server started: the one workspace it
//	              may act in; absent: the user's memberships decide.
//	ticket_id     the run's own ticket (optional)
//	conversation_id the conversation the run belongs to (optional): the
//	              flow key of its calls (gateway.FlowKey)
//	kind          user | agent (optional; absent: agent when workspace_id is
//	              set, else user). Any other value is kept, and the policy
//	              refuses every tool for it.

// EnvCCServerAudience names the cc_server JWT audience variable.
const EnvCCServerAudience = "MCPGATE_CCSERVER_JWT_AUDIENCE"

// ccClaims is the payload of a cc_server JWT.
type ccClaims struct {
	jwt.RegisteredClaims
	Kind        string `json:"kind,omitempty"`
	Mode        string `json:"mode,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	TicketID    string `json:"ticket_id,omitempty"`
	// Conversation is the conversation_id claim.
	Conversation string `json:"conversation_id,omitempty"`
}

// CCServer authenticates cc_server JWTs with a JWT verifier whose
// audience is the cc_server one (NewJWT with
// JWTConfig.Audience = MCPGATE_CCSERVER_JWT_AUDIENCE). It implements
// mcp.Authenticator.
type CCServer struct{ J *JWT }

// Authenticate verifies the cc_server JWT in "Authorization: Bearer" as
// JWT.Authenticate verifies agent tokens (algorithm, key, exp, aud, iss),
// requires a non-empty sub and returns the principal: Kind from the kind
// claim (see above), Mode, WorkspaceID (the pinned workspace, "" for
// none), TicketID. Every failure is an EUnauthenticated *gateway.Error
// that says what to fix; messages never contain the token.
func (a CCServer) Authenticate(r *http.Request) (*gateway.Principal, error) {
	j := a.J
	raw, err := BearerToken(r)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(raw, APITokenPrefix) {
		return nil, unauthenticated("the cc_server endpoint takes cc_server JWTs (aud %q); scmt_ API tokens belong on /api/mcp of the main listener", j.audience)
	}
	if len(raw) > maxTokenBytes {
		return nil, unauthenticated("bearer token is longer than %d bytes; send the cc_server JWT", maxTokenBytes)
	}
	var c ccClaims
	tok, err := j.parseStrict(j.parser, raw, &c, ccClaimNames)
	if err != nil {
		var sc sessionClaims
		sc.RegisteredClaims = c.RegisteredClaims
		return nil, j.explain(err, tok, &sc)
	}
	if c.Subject == "" {
		return nil, unauthenticated("token has no sub claim; cc_server tokens must name the acting user in sub")
	}
	kind := gateway.PrincipalKind(c.Kind)
	if c.Kind == "" {
		kind = gateway.PrincipalUser
		if c.WorkspaceID != "" {
			kind = gateway.PrincipalAgent
		}
	}
	return &gateway.Principal{
		Kind: kind, Subject: c.Subject, WorkspaceID: c.WorkspaceID, TicketID: c.TicketID, Mode: c.Mode,
		ConversationID: c.Conversation, ExpiresAt: c.ExpiresAt.Time.UTC(),
	}, nil
}

// CCClaims are the claims of a cc_server JWT that IssueCCServer signs.
// Subject is required; the rest are optional (see the package's cc_server
// claims).
type CCClaims struct {
	Subject     string
	Kind        string
	Mode        string
	WorkspaceID string
	TicketID    string
	// ConversationID is the conversation_id claim ("" for none).
	ConversationID string
}

// IssueCCServer signs an HS256 cc_server token for c, valid for ttl, with
// the verifier's audience (the cc_server one) and issuer. It is for
// development (`serve --dev` prints one) and tests; it fails as Issue does,
// and when c.Subject is empty.
func (j *JWT) IssueCCServer(c CCClaims, ttl time.Duration) (string, error) {
	if j.alg != jwt.SigningMethodHS256.Alg() {
		return "", unauthenticated("cannot issue tokens with a %s public key; issuing needs %s (HS256)", j.alg, EnvSecret)
	}
	if c.Subject == "" || ttl <= 0 {
		return "", gateway.Errorf(gateway.EInvalid, "a cc_server token needs a subject and a positive lifetime")
	}
	claims := newCCClaims(c, j.issuer, j.audience, j.now(), ttl)
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(j.key)
}

// newCCClaims is the payload of a cc_server token for c issued at now.
func newCCClaims(c CCClaims, issuer, audience string, now time.Time, ttl time.Duration) ccClaims {
	return ccClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: c.Subject, Issuer: issuer, Audience: jwt.ClaimStrings{audience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Kind: c.Kind, Mode: c.Mode, WorkspaceID: c.WorkspaceID, TicketID: c.TicketID,
		Conversation: c.ConversationID,
	}
}

// SignCCServer returns a cc_server token for c, valid for ttl from now,
// with the signer's aud (give the signer the cc_server audience,
// MCPGATE_CCSERVER_JWT_AUDIENCE) and iss, signed with the signer's key
// (HS256 secret or private key). It fails when ttl ≤ 0 or c.Subject is
// empty. It is what `mcpgate jwt mint --cc` signs.
func (s *Signer) SignCCServer(c CCClaims, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", errors.New("token lifetime is not positive; cc_server tokens must expire")
	}
	if c.Subject == "" {
		return "", errors.New("a cc_server token needs a subject (the acting user)")
	}
	return jwt.NewWithClaims(s.method, newCCClaims(c, s.issuer, s.audience, s.now(), ttl)).SignedString(s.key)
}
