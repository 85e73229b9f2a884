package auditchain

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// The message a checkpoint's signature covers is spelled out: a verifier
// in another language must be able to rebuild it.
func TestCheckpointMessage(t *testing.T) {
	cp := Checkpoint{Seq: 42, Hash: Link(Genesis, []byte("x")), Time: time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("X", 3600))}
	want := `{"hash":"` + cp.Hash.String() + `","seq":42,"time":"2026-01-02T02:04:05.000006Z","type":"mcpgate.audit.checkpoint.v1"}`
	if got := string(cp.Message()); got != want {
		t.Fatalf("message\n got %s\nwant %s", got, want)
	}
}

// A signed checkpoint verifies with its public key only, and not once any
// of seq, hash or time changed; an unsigned one is refused by a key.
func TestCheckpointSignature(t *testing.T) {
	key, other := newKey(t), newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	cp := Checkpoint{Seq: 7, Hash: Link(Genesis, []byte("row")), Time: time.Now()}
	cp.Sign(key)
	if err := cp.CheckSignature(pub); err != nil {
		t.Fatalf("own key: %v", err)
	}
	if cp.KeyID != KeyID(pub) || len(cp.KeyID) != 16 {
		t.Fatalf("key id %q", cp.KeyID)
	}
	back := cp
	if err := back.ParseSignature(cp.SignatureText()); err != nil || back.CheckSignature(pub) != nil {
		t.Fatalf("signature through its text: %v", err)
	}
	if err := cp.CheckSignature(other.Public().(ed25519.PublicKey)); err == nil || !strings.Contains(err.Error(), "not by the given public key") {
		t.Errorf("another key: %v; want refused", err)
	}
	for name, change := range map[string]func(c *Checkpoint){
		"seq":  func(c *Checkpoint) { c.Seq++ },
		"hash": func(c *Checkpoint) { c.Hash[3] ^= 1 },
		"time": func(c *Checkpoint) { c.Time = c.Time.Add(time.Microsecond) },
	} {
		c := cp
		change(&c)
		if err := c.CheckSignature(pub); err == nil || !strings.Contains(err.Error(), "does not verify") {
			t.Errorf("%s changed: %v; want the signature refused", name, err)
		}
	}
	unsigned := Checkpoint{Seq: 7, Hash: cp.Hash, Time: cp.Time}
	unsigned.Sign(nil)
	if err := unsigned.CheckSignature(pub); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Errorf("unsigned: %v; want refused", err)
	}
}

func TestParsePublicKey(t *testing.T) {
	key := newKey(t)
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	if err != nil || !pub.Equal(key.Public()) {
		t.Fatalf("PKIX public key: %v", err)
	}
	priv, _ := x509.MarshalPKCS8PrivateKey(key)
	if _, err := ParsePublicKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv})); err == nil || !strings.Contains(err.Error(), "-pubout") {
		t.Errorf("a private key given as the public one: %v; want refused, saying how to write the public key", err)
	}
}

// countingCheckpoints is a store of one chain head that counts reads.
type countingCheckpoints struct {
	head  Head
	cps   []Checkpoint
	reads int
}

func (s *countingCheckpoints) AuditChainHead(context.Context) (Head, error) {
	s.reads++
	return s.head, nil
}

func (s *countingCheckpoints) LatestAuditCheckpoint(_ context.Context, before time.Time) (Checkpoint, bool, error) {
	s.reads++
	for i := len(s.cps) - 1; i >= 0; i-- {
		if !s.cps[i].Time.After(before) {
			return s.cps[i], true, nil
		}
	}
	return Checkpoint{}, false, nil
}

func (s *countingCheckpoints) AddAuditCheckpoint(_ context.Context, cp Checkpoint) (bool, error) {
	s.cps = append(s.cps, cp)
	return true, nil
}

// The sealing loop runs Round four times a second: between looks it
// reads nothing, and it writes one checkpoint per interval when the head
// moves.
func TestCheckpointerReadsOnlyWhenDue(t *testing.T) {
	s := &countingCheckpoints{head: Head{Seq: 3, Hash: Link(Genesis, []byte("a"))}}
	c := &Checkpointer{Store: s, Every: time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	wrote := 0
	for i := range 4 * 180 { // three minutes of rounds
		now := t0.Add(time.Duration(i) * Every)
		if i == 4*90 {
			s.head = Head{Seq: 9, Hash: Link(s.head.Hash, []byte("b"))}
		}
		ok, err := c.Round(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			wrote++
		}
	}
	if wrote != 2 || s.cps[0].Seq != 3 || s.cps[1].Seq != 9 || !s.cps[1].Time.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("checkpoints %+v; want seq 3 at once and seq 9 when the head moved (90 s)", s.cps)
	}
	if s.reads > 40 {
		t.Fatalf("%d store reads in 720 rounds; want a few per interval", s.reads)
	}
}
