package auditchain

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpgate/mcpgate/gateway/canon"
)

// Checkpoint is a signed statement of the chain at one point: the row
// sealed as Seq has hash Hash, as the sealer saw it at Time. With a key
// (MCPGATE_AUDIT_SIGNING_KEY_FILE) it carries an Ed25519 Signature over
// Message() and the KeyID of the key; without one both are empty.
// Whoever holds the public key can then tell the chain up to Seq from a
// chain rewritten by someone with write access to the database only.
type Checkpoint struct {
	Seq  int64
	Hash Hash
	// Time is UTC to the microsecond.
	Time time.Time
	// KeyID is KeyID(public key) of the signing key, "" when unsigned.
	KeyID string
	// Signature is Ed25519(Message()), nil when unsigned.
	Signature []byte
}

// checkpointType names what a checkpoint's message is, so that a
// signature over it means nothing else.
const checkpointType = "mcpgate.audit.checkpoint.v1"

// Message is what the signature covers: the RFC 8785 form of
// {"hash": hex, "seq": Seq, "time": UTC with six fractional digits,
// "type": "mcpgate.audit.checkpoint.v1"}.
func (cp *Checkpoint) Message() []byte {
	b, err := canon.Canonical(map[string]any{
		"hash": cp.Hash.String(),
		"seq":  json.Number(strconv.FormatInt(cp.Seq, 10)),
		"time": cp.Time.UTC().Format(timeLayout),
		"type": checkpointType,
	})
	if err != nil { // strings and an integer: always canonical
		panic(err)
	}
	return b
}

// Sign signs cp with key, or leaves it unsigned when key is nil.
func (cp *Checkpoint) Sign(key ed25519.PrivateKey) {
	cp.Time = cp.Time.UTC().Truncate(time.Microsecond)
	if key == nil {
		cp.KeyID, cp.Signature = "", nil
		return
	}
	cp.KeyID = KeyID(key.Public().(ed25519.PublicKey))
	cp.Signature = ed25519.Sign(key, cp.Message())
}

// CheckSignature reports nil when cp carries a signature of pub over its
// message, and otherwise an error saying what is wrong (unsigned, signed
// by another key, or a signature that does not verify).
func (cp *Checkpoint) CheckSignature(pub ed25519.PublicKey) error {
	id := KeyID(pub)
	switch {
	case len(cp.Signature) == 0:
		return fmt.Errorf("checkpoint at seq %d is not signed (the gateway ran without MCPGATE_AUDIT_SIGNING_KEY_FILE when it wrote it)", cp.Seq)
	case cp.KeyID != id:
		return fmt.Errorf("checkpoint at seq %d was signed by key %s, not by the given public key (%s)", cp.Seq, cp.KeyID, id)
	case !ed25519.Verify(pub, cp.Message(), cp.Signature):
		return fmt.Errorf("checkpoint at seq %d: the signature does not verify with the given public key %s: the checkpoint was changed", cp.Seq, id)
	}
	return nil
}

// SignatureText is the signature as the stores and exports keep it:
// standard base64, "" when unsigned.
func (cp *Checkpoint) SignatureText() string {
	return base64.StdEncoding.EncodeToString(cp.Signature)
}

// ParseSignature reads SignatureText's form into cp.Signature.
func (cp *Checkpoint) ParseSignature(s string) error {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("checkpoint at seq %d: the signature is not base64: %w", cp.Seq, err)
	}
	if len(b) == 0 {
		b = nil
	}
	cp.Signature = b
	return nil
}

// KeyID names a public key: the first 16 hex digits of SHA-256 of its 32
// bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// ParsePublicKey reads an Ed25519 public key in PEM: a PUBLIC KEY block
// (PKIX, as `openssl pkey -in key.pem -pubout` writes it).
func ParsePublicKey(pemBytes []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("not a PEM PUBLIC KEY block; write one with: openssl pkey -in signing-key.pem -pubout")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("unreadable public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("the public key is a %T, not Ed25519", k)
	}
	return pub, nil
}

// CheckpointEvery is how often the sealer's loop writes a checkpoint of
// the chain head, when the head moved since the last one.
const CheckpointEvery = time.Minute

// Checkpoints is what a checkpoint round needs of a store
// (store.AuditChain).
type Checkpoints interface {
	// AuditChainHead returns the last sealed seq and its hash.
	AuditChainHead(ctx context.Context) (Head, error)
	// LatestAuditCheckpoint returns the checkpoint with the highest seq
	// whose time is at or before before; false when there is none.
	LatestAuditCheckpoint(ctx context.Context, before time.Time) (Checkpoint, bool, error)
	// AddAuditCheckpoint stores cp unless a checkpoint of its seq exists
	// (another replica wrote it); it reports whether it stored cp.
	AddAuditCheckpoint(ctx context.Context, cp Checkpoint) (bool, error)
}

// Checkpointer writes the periodic checkpoints: at most one every Every
// (CheckpointEvery when 0), of the chain head, signed with Key (nil:
// unsigned). It is not safe for concurrent use (one sealing loop runs
// it).
type Checkpointer struct {
	Store Checkpoints
	Key   ed25519.PrivateKey
	Every time.Duration
	// next is when Round next looks at the store: the loop's rounds
	// between cost nothing.
	next time.Time
}

// idleLook is how long Round waits before it looks again at a head that
// had not moved.
const idleLook = 10 * time.Second

// Round writes a checkpoint of the chain head at now when the last one is
// at least Every old (or there is none) and the head moved past it. It
// reports whether it wrote one. Between looks at the store (until the
// last checkpoint is Every old, or idleLook after a head that had not
// moved) it returns at once. Replicas may all run it: the last
// checkpoint's time spaces them, and a checkpoint of a seq that exists is
// not written twice.
func (c *Checkpointer) Round(ctx context.Context, now time.Time) (bool, error) {
	every := c.Every
	if every <= 0 {
		every = CheckpointEvery
	}
	if now.Before(c.next) {
		return false, nil
	}
	last, ok, err := c.Store.LatestAuditCheckpoint(ctx, now.Add(every))
	if err != nil {
		return false, err
	}
	if ok && now.Sub(last.Time) < every {
		c.next = last.Time.Add(every)
		return false, nil
	}
	head, err := c.Store.AuditChainHead(ctx)
	if err != nil || head.Seq == 0 || (ok && head.Seq <= last.Seq) {
		c.next = now.Add(min(idleLook, every))
		return false, err
	}
	cp := Checkpoint{Seq: head.Seq, Hash: head.Hash, Time: now}
	cp.Sign(c.Key)
	return c.Store.AddAuditCheckpoint(ctx, cp)
}

// CheckpointLister is what CheckSignatures reads of a store
// (store.AuditChain).
type CheckpointLister interface {
	// AuditCheckpoints returns the checkpoints with after < Seq <=
	// through, in seq order.
	AuditCheckpoints(ctx context.Context, after, through int64) ([]Checkpoint, error)
}

// CheckSignatures checks that pub signed every checkpoint store keeps up
// to seq through (the chain head, whose rows a verification recomputed and
// compared with the checkpoints' hashes). It returns how many signatures
// verified, and the first checkpoint refused (unsigned, signed by another
// key, or changed) as a Problem of What BadCheckpoint; the error is for a
// store that cannot be read.
func CheckSignatures(ctx context.Context, store CheckpointLister, through int64, pub ed25519.PublicKey) (int, *Problem, error) {
	cps, err := store.AuditCheckpoints(ctx, 0, through)
	if err != nil {
		return 0, nil, err
	}
	for i := range cps {
		if err := cps[i].CheckSignature(pub); err != nil {
			return i, &Problem{Seq: cps[i].Seq, What: BadCheckpoint, Detail: err.Error()}, nil
		}
	}
	return len(cps), nil, nil
}
