package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
)

// SessionStore keeps signed-in sessions (consolesession.Session: IDHash,
// never the cookie value; the credential sealed under a key derived from
// it) where every replica of the gateway reads them (the audit store), so
// a browser may land on any replica (docs/architecture.md, "Replicas").
// Options.Sessions nil keeps them in this process's memory instead.
type SessionStore interface {
	// CreateSession stores s; ErrSessionsFull when there is no room.
	CreateSession(ctx context.Context, s *consolesession.Session) error
	// Session returns the session idHash names if it expires after now,
	// else nil and no error.
	Session(ctx context.Context, idHash string, now time.Time) (*consolesession.Session, error)
	// SetFlash replaces the session's flash.
	SetFlash(ctx context.Context, idHash string, flash []byte) error
	// TakeFlash returns the session's flash and clears it: of concurrent
	// takes at most one gets it. nil when none.
	TakeFlash(ctx context.Context, idHash string) ([]byte, error)
	// DeleteSession ends the session; an unknown one is no error.
	DeleteSession(ctx context.Context, idHash string) error
}

// ErrSessionsFull is CreateSession's error when the in-memory session
// table is full of live signed-in sessions.
var ErrSessionsFull = errors.New("the console has too many open sessions")

// session is one visitor's state for one request. A signed-out visitor's
// session has no id and no token; its csrf is the sign-in form's cookie.
type session struct {
	id      string // the cookie value; "" before sign-in
	csrf    string
	token   string // the credential the visitor signed in with; "" before sign-in
	expires time.Time
	kind    consolesession.Kind
	// operator is the name the visitor gave at sign-in, recorded as
	// decided_by of the approvals they decide ("" when none was given).
	operator string
	// reader is the one workspace a reader or workspace admin session may
	// see: pages show no change forms, except the token forms of a
	// workspace admin; "" for the admin token.
	reader string
	// user is a workspace admin's user id.
	user string
}

// tokenAdmin reports whether the session may create and revoke the API
// tokens of its workspace without being the admin token's.
func (sess *session) tokenAdmin() bool { return sess.kind == consolesession.WorkspaceAdmin }

// createdToken is a freshly minted API token on its way to the one page
// that shows it (docs/requirements.md#api-tokens: shown exactly once).
type createdToken struct {
	Workspace   string
	Label       string
	Value       string
	Fingerprint string
}

// randomToken returns 32 bytes from crypto/rand, base64url: session ids,
// CSRF tokens and sign-in form tokens.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return base64.RawURLEncoding.EncodeToString(b)
}

// idHash is the stored key of a session: hex SHA-256 of its cookie value.
func idHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// sealer is the AEAD of one session, keyed from its cookie value; the
// session's IDHash is the additional data, so a sealed value opens only in
// its own row.
func sealer(id string) cipher.AEAD {
	key, err := hkdf.Key(sha256.New, []byte(id), nil, "mcpgate console session seal v1", 32)
	if err != nil {
		panic(err) // only for lengths out of range; 32 is not
	}
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	return aead
}

// seal encrypts plain for session id: nonce then ciphertext.
func seal(id string, plain []byte) []byte {
	aead := sealer(id)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, plain, []byte(idHash(id)))
}

// unseal reverses seal; it fails for a value sealed for another id.
func unseal(id string, sealed []byte) ([]byte, error) {
	aead := sealer(id)
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("sealed value too short")
	}
	return aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(idHash(id)))
}

// startSession stores a new signed-in session made from proto (token,
// kind, expiry, operator, reader, user) under a fresh id and CSRF token.
func (c *Console) startSession(ctx context.Context, proto session) (*session, error) {
	sess := proto
	sess.id, sess.csrf = randomToken(), randomToken()
	err := c.sessions.CreateSession(ctx, &consolesession.Session{
		IDHash: idHash(sess.id), Kind: sess.kind, WorkspaceID: sess.reader, Subject: sess.user,
		Operator: sess.operator, CSRF: sess.csrf, SealedToken: seal(sess.id, []byte(sess.token)),
		CreatedAt: c.opts.Now().UTC(), ExpiresAt: sess.expires.UTC(),
	})
	if err != nil {
		return nil, err
	}
	return &sess, nil
}

// loadSession returns the live session of cookie value id, or nil. A row
// whose sealed token does not open with id is no session.
func (c *Console) loadSession(ctx context.Context, id string) (*session, error) {
	st, err := c.sessions.Session(ctx, idHash(id), c.opts.Now())
	if err != nil || st == nil {
		return nil, err
	}
	token, err := unseal(id, st.SealedToken)
	if err != nil || len(token) == 0 {
		return nil, nil
	}
	return &session{id: id, csrf: st.CSRF, token: string(token), expires: st.ExpiresAt, kind: st.Kind,
		operator: st.Operator, reader: st.WorkspaceID, user: st.Subject}, nil
}

// flash is what one page hands the session's next page: a created API
// token (shown once), or the page a POST rendered, which the POST's
// redirect shows (POST/redirect/GET).
type flash struct {
	Token *createdToken `json:"token,omitempty"`
	Page  *shownPage    `json:"page,omitempty"`
}

// shownPage is a page a POST rendered: its status and HTML.
type shownPage struct {
	Status int    `json:"status"`
	HTML   []byte `json:"html"`
}

// setFlash keeps f, sealed, for the session's next page.
func (c *Console) setFlash(ctx context.Context, sess *session, f flash) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return c.sessions.SetFlash(ctx, idHash(sess.id), seal(sess.id, b))
}

// takeFlash returns and forgets the session's flash, if any.
func (c *Console) takeFlash(ctx context.Context, sess *session) flash {
	var f flash
	sealed, err := c.sessions.TakeFlash(ctx, idHash(sess.id))
	if err != nil || sealed == nil {
		return f
	}
	if b, err := unseal(sess.id, sealed); err == nil {
		_ = json.Unmarshal(b, &f)
	}
	return f
}

// csrfOK reports whether got is the session's CSRF token (constant time).
func (sess *session) csrfOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) == 1
}

// memorySessions is the SessionStore of a console without Options.Sessions:
// one process's memory, at most max sessions. Behind several replicas a
// browser must then come back to the one that signed it in.
type memorySessions struct {
	mu   sync.Mutex
	byID map[string]consolesession.Session
	max  int
}

func newMemorySessions(max int) *memorySessions {
	return &memorySessions{byID: map[string]consolesession.Session{}, max: max}
}

// CreateSession drops expired sessions when the table is full, then
// refuses with ErrSessionsFull if it still is.
func (m *memorySessions) CreateSession(_ context.Context, s *consolesession.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byID) >= m.max {
		for id, old := range m.byID {
			if !s.CreatedAt.Before(old.ExpiresAt) {
				delete(m.byID, id)
			}
		}
		if len(m.byID) >= m.max {
			return ErrSessionsFull
		}
	}
	m.byID[s.IDHash] = *s
	return nil
}

func (m *memorySessions) Session(_ context.Context, idHash string, now time.Time) (*consolesession.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byID[idHash]
	if !ok {
		return nil, nil
	}
	if !now.Before(s.ExpiresAt) {
		delete(m.byID, idHash)
		return nil, nil
	}
	return &s, nil
}

func (m *memorySessions) SetFlash(_ context.Context, idHash string, flash []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.byID[idHash]; ok {
		s.Flash = flash
		m.byID[idHash] = s
	}
	return nil
}

func (m *memorySessions) TakeFlash(_ context.Context, idHash string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byID[idHash]
	if !ok {
		return nil, nil
	}
	f := s.Flash
	s.Flash = nil
	m.byID[idHash] = s
	return f, nil
}

func (m *memorySessions) DeleteSession(_ context.Context, idHash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byID, idHash)
	return nil
}
