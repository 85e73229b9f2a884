package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// session is one browser's state, kept on the server only: the browser
// holds just the random id in a cookie. A session without a token is a
// signed-out visitor's, made so the sign-in form carries a CSRF token too.
type session struct {
	id      string
	csrf    string
	token   string // the credential the visitor signed in with; "" before sign-in
	expires time.Time
	// operator is the name the visitor gave at sign-in, recorded as
	// decided_by of the approvals they decide ("" when none was given).
	operator string
	// reader is the workspace of an scmt_ token with management:read: the
	// session may only read that workspace (the admin API's rule for such
	// tokens); "" for the admin token.
	reader string
	// flash is the value of a token just created, shown by the next page
	// and then forgotten (seed 002, step 1: shown exactly once).
	flash *createdToken
}

// createdToken is a freshly minted API token on its way to the one page
// that shows it.
type createdToken struct {
	Workspace   string
	Label       string
	Value       string
	Fingerprint string
}

// sessions is an in-memory session table. It lives in one process: behind
// several replicas a browser must come back to the one that signed it in
// (or sign in again).
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
	max  int
}

func newSessions(max int) *sessions {
	return &sessions{byID: map[string]*session{}, max: max}
}

// randomToken returns 32 bytes from crypto/rand, base64url: session ids and
// CSRF tokens.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return base64.RawURLEncoding.EncodeToString(b)
}

// create stores proto (token, expiry, operator, reader) as a new session
// with a fresh id and CSRF token and returns a copy. When the table is full
// after dropping expired sessions, the signed-out session that ends first
// gives way (anyone can start one by opening the sign-in page, so they must
// not crowd out sign-ins); with none to drop it returns nil.
func (s *sessions) create(proto session, now time.Time) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= s.max {
		oldest := ""
		for id, old := range s.byID {
			switch {
			case !now.Before(old.expires):
				delete(s.byID, id)
			case old.token == "" && (oldest == "" || old.expires.Before(s.byID[oldest].expires)):
				oldest = id
			}
		}
		if len(s.byID) >= s.max && oldest != "" {
			delete(s.byID, oldest)
		}
		if len(s.byID) >= s.max {
			return nil
		}
	}
	sess := proto
	sess.id, sess.csrf = randomToken(), randomToken()
	s.byID[sess.id] = &sess
	c := sess
	return &c
}

// get returns a copy of the live session id names, or nil (unknown or
// expired; an expired one is dropped).
func (s *sessions) get(id string, now time.Time) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byID[id]
	if !ok {
		return nil
	}
	if !now.Before(sess.expires) {
		delete(s.byID, id)
		return nil
	}
	c := *sess
	return &c
}

// delete ends a session.
func (s *sessions) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

// setFlash keeps a created token for the next page of session id.
func (s *sessions) setFlash(id string, t *createdToken) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.byID[id]; ok {
		sess.flash = t
	}
}

// takeFlash returns and forgets the created token of session id, if any.
func (s *sessions) takeFlash(id string) *createdToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byID[id]
	if !ok {
		return nil
	}
	t := sess.flash
	sess.flash = nil
	return t
}

// csrfOK reports whether got is the session's CSRF token (constant time).
func (sess *session) csrfOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) == 1
}
