package sessionid

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// TestSessionMACIsTheDocumentedOne recomputes a minted id's MAC from the
// formula in sessionid.go, with the hashes made the plain way: replicas of
// different builds behind one load balancer verify each other's ids.
func TestSessionMACIsTheDocumentedOne(t *testing.T) {
	key := []byte(strings.Repeat("k", MinSecretBytes))
	s := NewSigner(key, time.Hour, func(v string) bool { return v == "2025-11-25" })
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "olivia", WorkspaceID: "ws-a", TaskID: "t-1",
		ProfileID: "p-1", TokenFingerprint: "fp", Scopes: []string{"b", "a"}}
	long := *p
	long.Subject = strings.Repeat("x", 300) // an identity larger than the stack buffer
	for _, who := range []*gateway.Principal{p, &long} {
		id := s.Mint(who, "2025-11-25", 0, time.Now())
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, Prefix))
		if err != nil {
			t.Fatal(err)
		}
		body, mac := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
		digest := sha256.New()
		scopes := slices.Sorted(slices.Values(who.Scopes))
		for _, f := range []string{string(who.Kind), who.Subject, who.WorkspaceID, who.TaskID, who.ProfileID, who.TokenFingerprint, fmt.Sprintf("%q", scopes)} {
			digest.Write(binary.BigEndian.AppendUint32(nil, uint32(len(f))))
			digest.Write([]byte(f))
		}
		want := hmac.New(sha256.New, key)
		want.Write([]byte(Label))
		want.Write(body)
		want.Write(digest.Sum(nil))
		if !hmac.Equal(mac, want.Sum(nil)) {
			t.Fatalf("the MAC of %s is not HMAC-SHA256 of label, body and identity digest", id)
		}
		if _, err := s.Verify(id, who, time.Now()); err != nil {
			t.Fatalf("minted id does not verify: %v", err)
		}
		if _, err := s.Verify(id+"A", who, time.Now()); err == nil {
			t.Fatal("an id with a character more verified")
		}
	}
}
