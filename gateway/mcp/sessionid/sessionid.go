// Package sessionid mints and verifies the signed, self-contained session
// ids of MCP's Streamable HTTP transport, and defines the credential
// Identity a session is bound to.
package sessionid

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"slices"
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
//	digest = SHA-256 of the whole credential Identity (Identity: every
//	         field of gateway.Principal but ExpiresAt)
//	caps = bit set of the client capabilities the gateway acts on
//	       (CapElicitForm: the client answers elicitation/create in form mode)
//
// The Identity digest is signed but not carried: a replica recomputes it
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
	// Prefix and Label are the id prefix and MAC label of the current
	// form.
	Prefix = "s2."
	Label  = "mcpgate/session/v2"
	// PrefixV1 and LabelV1 are those of the "s1." form: no caps byte.
	PrefixV1 = "s1."
	LabelV1  = "mcpgate/session/v1"
	// NonceLen is the length of an id's random nonce, in bytes.
	NonceLen = 16
	// MinSecretBytes is the shortest signing key accepted.
	MinSecretBytes = 32
)

// Identity is what binds a session to its owner: the whole Identity of the
// credential that opened it, every field of gateway.Principal except the
// expiry (a renewed token keeps its sessions). A session id presented with
// a credential that differs in any of them (another user, workspace, task,
// agent profile, kind, token, scope set, cc_server mode, ticket or
// conversation) is
// treated as unknown (404): it
// cannot use, stream, cancel calls of, post to or end the session, so a
// leaked session id is useless without the credential that opened it (MCP
// 2025-11-25, basic/security_best_practices, "Session Hijacking").
type Identity struct {
	kind      gateway.PrincipalKind
	subject   string
	workspace string
	task      string
	profile   string
	tokenFP   string
	scopes    string // sorted and quoted: ["mcp:ops" "mcp:read"]
	mode      string // cc_server conversation mode
	ticket    string // cc_server run's ticket
	convo     string // cc_server conversation (its flow key)
}

// IdentityOf is p's identity; identities compare with ==.
func IdentityOf(p *gateway.Principal) Identity {
	scopes := slices.Clone(p.Scopes)
	slices.Sort(scopes)
	return Identity{
		kind: p.Kind, subject: p.Subject, workspace: p.WorkspaceID, task: p.TaskID,
		profile: p.ProfileID, tokenFP: p.TokenFingerprint, scopes: fmt.Sprintf("%q", scopes),
		mode: p.Mode, ticket: p.TicketID, convo: p.ConversationID,
	}
}

// Caps is the bit set of the client capabilities, declared at
// initialize, that the gateway acts on.
type Caps uint8

// CapElicitForm: the client declared elicitation in form mode (MCP
// 2025-06-18 "elicitation": {}, 2025-11-25 "elicitation": {"form": {}}).
const CapElicitForm Caps = 1

// Signer mints and verifies session ids with one key.
type Signer struct {
	key    []byte
	maxAge time.Duration
	accept func(version string) bool
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

// NewSigner returns a Signer with key whose ids verify for maxAge after
// they are minted, and only for the protocol versions accept reports true
// for (the versions served with a session).
func NewSigner(key []byte, maxAge time.Duration, accept func(version string) bool) *Signer {
	s := &Signer{key: key, maxAge: maxAge, accept: accept}
	s.macs = &sync.Pool{New: func() any {
		return &macState{h: hmac.New(sha256.New, s.key), sum: make([]byte, 0, sha256.Size)}
	}}
	return s
}

// Claims is what a verified id says.
type Claims struct {
	Version string    // the negotiated protocol version
	Caps    Caps      // the client capabilities the gateway acts on
	Created time.Time // when initialize minted the id
}

func identityDigest(p *gateway.Principal) [sha256.Size]byte {
	id := IdentityOf(p)
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
	if id.mode != "" || id.ticket != "" || id.convo != "" {
		for _, f := range [...]string{id.mode, id.ticket} {
			b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
			b = append(b, f...)
		}
	}
	// The conversation likewise, as a third field only when set.
	if id.convo != "" {
		b = binary.BigEndian.AppendUint32(b, uint32(len(id.convo)))
		b = append(b, id.convo...)
	}
	return sha256.Sum256(b)
}

// MAC is the id's MAC of the formula above: HMAC-SHA256 with the key of
// label, body and p's identity digest.
func (s *Signer) MAC(label string, body []byte, p *gateway.Principal) [sha256.Size]byte {
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

// Mint returns a new signed id for p's session of protocol version whose
// client declared caps.
func (s *Signer) Mint(p *gateway.Principal, version string, caps Caps, now time.Time) string {
	body := make([]byte, 0, 1+len(version)+1+8+NonceLen)
	body = append(body, byte(len(version)))
	body = append(body, version...)
	body = append(body, byte(caps))
	body = binary.BigEndian.AppendUint64(body, uint64(now.UnixMilli()))
	var nonce [NonceLen]byte
	_, _ = rand.Read(nonce[:])
	body = append(body, nonce[:]...)
	mac := s.MAC(Label, body, p)
	return Prefix + base64.RawURLEncoding.EncodeToString(append(body, mac[:]...))
}

// ErrBadID is Verify's one error.
var ErrBadID = errors.New("session id does not verify")

// Verify checks id's signature for p's credential and its age. Any defect
// (not ours, tampered, another credential, too old, a version this
// transport does not speak) is ErrBadID.
func (s *Signer) Verify(id string, p *gateway.Principal, now time.Time) (Claims, error) {
	label, capsLen := Label, 1
	enc, ok := strings.CutPrefix(id, Prefix)
	if !ok {
		label, capsLen = LabelV1, 0
		enc, ok = strings.CutPrefix(id, PrefixV1)
	}
	if !ok || len(enc) > 256 {
		return Claims{}, ErrBadID
	}
	var rawBuf [192]byte // 3/4 of the longest enc: decoding allocates nothing
	raw, err := base64.RawURLEncoding.AppendDecode(rawBuf[:0], []byte(enc))
	var encBuf [256]byte
	if err != nil || len(raw) < 1 || string(base64.RawURLEncoding.AppendEncode(encBuf[:0], raw)) != enc {
		return Claims{}, ErrBadID
	}
	n := int(raw[0])
	if len(raw) != 1+n+capsLen+8+NonceLen+sha256.Size {
		return Claims{}, ErrBadID
	}
	body, mac := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if want := s.MAC(label, body, p); !hmac.Equal(mac, want[:]) {
		return Claims{}, ErrBadID
	}
	at := 1 + n + capsLen
	c := Claims{
		Version: string(body[1 : 1+n]),
		Created: time.UnixMilli(int64(binary.BigEndian.Uint64(body[at : at+8]))),
	}
	if capsLen == 1 {
		c.Caps = Caps(body[1+n])
	}
	if !s.accept(c.Version) || now.Sub(c.Created) > s.maxAge || c.Created.After(now.Add(time.Minute)) {
		return Claims{}, ErrBadID
	}
	return c, nil
}
