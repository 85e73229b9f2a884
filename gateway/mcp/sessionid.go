package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Session ids of the Streamable HTTP protocol versions 2025-03-26 to
// 2025-11-25 are signed and self-contained, so that any replica holding the
// same SessionSecret serves any request of any session, including one it
// has never seen (no sticky sessions; docs/operations.md#replicas):
//
//	"s2." base64url( version-len(1) | version | caps(1) | created(8, unix milliseconds, big endian) | nonce(16) | mac(32) )
//	mac = HMAC-SHA256(SessionSecret, "mcpgate/session/v2" | version-len | version | caps | created | nonce | digest)
//	digest = SHA-256 of the whole credential identity (identity: every
//	         field of gateway.Principal but ExpiresAt)
//	caps = bit set of the client capabilities the gateway acts on
//	       (capElicitForm: the client answers elicitation/create in form mode)
//
// The identity digest is signed but not carried: a replica recomputes it
// from the request's credential, so an id presented with another credential
// fails verification exactly like a forged or tampered one (404), and the id
// reveals nothing about its owner. The negotiated protocol version and the
// client capabilities the gateway uses (whether it may ask the client's
// user for an approval) are read from the id; the gateway needs no other
// session state. Ids of the earlier "s1." form (no caps byte, label
// "mcpgate/session/v1") still verify, with no capabilities, so a session
// started before an upgrade goes on.
//
// What a replica keeps in memory (the GET stream, running calls, the tool
// set the client last saw) is a cache of the session on that replica: a GET
// stream is served by the replica where it is opened, and its
// notifications come from that replica's RefreshTools. Ended sessions are
// recorded in SessionEnds, which all replicas must share for DELETE to hold
// everywhere.
const (
	sessionIDPrefix = "s2."
	sessionMACLabel = "mcpgate/session/v2"
	// The "s1." form: no caps byte.
	sessionIDPrefixV1 = "s1."
	sessionMACLabelV1 = "mcpgate/session/v1"
	sessionNonceLen   = 16
	// MinSessionSecretBytes is the shortest Options.SessionSecret accepted.
	MinSessionSecretBytes = 32
)

// clientCaps is the bit set of the client capabilities, declared at
// initialize, that the gateway acts on.
type clientCaps uint8

// capElicitForm: the client declared elicitation in form mode (MCP
// 2025-06-18 "elicitation": {}, 2025-11-25 "elicitation": {"form": {}}).
const capElicitForm clientCaps = 1

// SessionEnds records ended sessions, so that a session ended on one
// replica (DELETE) is refused by every replica. The transport declares it
// and calls it on DELETE and on each request of a session; every replica
// behind one load balancer must use the same store. MemorySessionEnds is
// the in-process implementation (tests, or a Transport on its own); the
// gateway's wiring uses the store's table of ended sessions
// (server.StoreSessionEnds), shared by every replica.
type SessionEnds interface {
	// End records that session id has ended. until is when the id stops
	// verifying anyway (its creation time plus Options.SessionMaxAge): the
	// record may be forgotten after it.
	End(ctx context.Context, id string, until time.Time) error
	// Ended reports whether End was called for id (and until has not passed).
	Ended(ctx context.Context, id string) (bool, error)
}

// MemorySessionEnds is a SessionEnds held in this process's memory; expired
// records are dropped as new ones are added. Share one value between the
// transports of one process; it does not reach other processes.
type MemorySessionEnds struct {
	mu    sync.Mutex
	ended map[string]time.Time
	now   func() time.Time
}

// NewMemorySessionEnds returns an empty in-memory SessionEnds.
func NewMemorySessionEnds() *MemorySessionEnds {
	return &MemorySessionEnds{ended: map[string]time.Time{}, now: time.Now}
}

// End records id as ended until until.
func (m *MemorySessionEnds) End(_ context.Context, id string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if len(m.ended) >= 1024 && len(m.ended)&1023 == 0 { // amortized sweep
		for k, u := range m.ended {
			if !now.Before(u) {
				delete(m.ended, k)
			}
		}
	}
	m.ended[id] = until
	return nil
}

// Ended reports whether id was ended and its record has not expired.
func (m *MemorySessionEnds) Ended(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.ended[id]
	return ok && m.now().Before(until), nil
}

// sessionSigner mints and verifies session ids with one key.
type sessionSigner struct {
	key    []byte
	maxAge time.Duration
	// macs keeps HMAC states keyed with key (*macState), so that a
	// request's id costs no hash allocation.
	macs *sync.Pool
}

// macState is one pooled HMAC-SHA256 keyed with the signer's key, with
// room for its sum.
type macState struct {
	h   hash.Hash
	sum []byte
}

func newSessionSigner(key []byte, maxAge time.Duration) sessionSigner {
	s := sessionSigner{key: key, maxAge: maxAge}
	s.macs = &sync.Pool{New: func() any {
		return &macState{h: hmac.New(sha256.New, s.key), sum: make([]byte, 0, sha256.Size)}
	}}
	return s
}

// sessionClaims is what a verified id says.
type sessionClaims struct {
	version string
	caps    clientCaps
	created time.Time
}

func identityDigest(p *gateway.Principal) [sha256.Size]byte {
	id := identityOf(p)
	// Length-prefixed fields: no two identities share an encoding.
	var buf [256]byte // most identities fit: no allocation
	b := buf[:0]
	for _, f := range [...]string{string(id.kind), id.subject, id.workspace, id.task, id.profile, id.tokenFP, id.scopes} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	// The cc_server fields join only when set, so the ids of every other
	// principal keep the digest they had before those fields existed
	// (replicas of two versions accept each other's ids); a set field
	// makes the encoding longer, so still no two identities share one.
	if id.mode != "" || id.ticket != "" {
		for _, f := range [...]string{id.mode, id.ticket} {
			b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
			b = append(b, f...)
		}
	}
	return sha256.Sum256(b)
}

func (s *sessionSigner) mac(label string, body []byte, p *gateway.Principal) [sha256.Size]byte {
	d := identityDigest(p)
	m := s.macs.Get().(*macState)
	defer s.macs.Put(m)
	m.h.Reset()
	m.h.Write([]byte(label))
	m.h.Write(body)
	m.h.Write(d[:])
	m.sum = m.h.Sum(m.sum[:0])
	return [sha256.Size]byte(m.sum)
}

// mint returns a new signed id for p's session of protocol version whose
// client declared caps.
func (s *sessionSigner) mint(p *gateway.Principal, version string, caps clientCaps, now time.Time) string {
	body := make([]byte, 0, 1+len(version)+1+8+sessionNonceLen)
	body = append(body, byte(len(version)))
	body = append(body, version...)
	body = append(body, byte(caps))
	body = binary.BigEndian.AppendUint64(body, uint64(now.UnixMilli()))
	var nonce [sessionNonceLen]byte
	_, _ = rand.Read(nonce[:])
	body = append(body, nonce[:]...)
	mac := s.mac(sessionMACLabel, body, p)
	return sessionIDPrefix + base64.RawURLEncoding.EncodeToString(append(body, mac[:]...))
}

var errBadSessionID = errors.New("session id does not verify")

// verify checks id's signature for p's credential and its age. Any defect
// (not ours, tampered, another credential, too old, a version this
// transport does not speak) is errBadSessionID.
func (s *sessionSigner) verify(id string, p *gateway.Principal, now time.Time) (sessionClaims, error) {
	label, capsLen := sessionMACLabel, 1
	enc, ok := strings.CutPrefix(id, sessionIDPrefix)
	if !ok {
		label, capsLen = sessionMACLabelV1, 0
		enc, ok = strings.CutPrefix(id, sessionIDPrefixV1)
	}
	if !ok || len(enc) > 256 {
		return sessionClaims{}, errBadSessionID
	}
	var rawBuf [192]byte // 3/4 of the longest enc: decoding allocates nothing
	raw, err := base64.RawURLEncoding.AppendDecode(rawBuf[:0], []byte(enc))
	var encBuf [256]byte
	if err != nil || len(raw) < 1 || string(base64.RawURLEncoding.AppendEncode(encBuf[:0], raw)) != enc {
		return sessionClaims{}, errBadSessionID
	}
	n := int(raw[0])
	if len(raw) != 1+n+capsLen+8+sessionNonceLen+sha256.Size {
		return sessionClaims{}, errBadSessionID
	}
	body, mac := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if want := s.mac(label, body, p); !hmac.Equal(mac, want[:]) {
		return sessionClaims{}, errBadSessionID
	}
	at := 1 + n + capsLen
	c := sessionClaims{
		version: string(body[1 : 1+n]),
		created: time.UnixMilli(int64(binary.BigEndian.Uint64(body[at : at+8]))),
	}
	if capsLen == 1 {
		c.caps = clientCaps(body[1+n])
	}
	if !versionOf(c.version).Streamable || now.Sub(c.created) > s.maxAge || c.created.After(now.Add(time.Minute)) {
		return sessionClaims{}, errBadSessionID
	}
	return c, nil
}
