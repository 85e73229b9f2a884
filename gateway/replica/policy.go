package replica

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
)

// Policies asks every replica to reload its policy folder when this one
// reloads, and runs the reloads other replicas ask of this one. Set its
// fields before the first reload; Lives may grow while the gateway opens
// (the surfaces' live policies, in order) and is read only afterwards.
type Policies struct {
	Feed Feed
	// Origin names this process in the requests it announces (NewOrigin).
	Origin string
	// Secret is the replicas' shared MCPGATE_SESSION_SECRET that seals a
	// vouch (Seal); empty: no vouch is sent or believed.
	Secret []byte
	// Retest runs a candidate's tests even when another replica vouches
	// for its bytes (MCPGATE_POLICY_RETEST_ON_REPLICAS).
	Retest bool
	// Ctx ends with the gateway, and with it a reload or an announcement
	// under way.
	Ctx   context.Context
	Log   *zap.Logger
	Lives []*policy.Live
}

// NewOrigin is a random id naming this process in the policy reload
// requests it announces.
func NewOrigin() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// announceTimeout bounds how long a reload waits for its announcement to
// the other replicas.
const announceTimeout = 2 * time.Second

// OnAttempt returns the policy.LiveOptions.OnAttempt of surface's Live: a
// reload asked for on this replica (admin API, `mcpgate policy reload`,
// the folder watcher) is asked of every replica on the feed, whatever its
// outcome here (each replica runs its own gated reload of its own
// folder). When the candidate passed, the announcement carries its
// content hash and test count: a replica whose folder holds the same
// bytes takes them without running the tests again. Reloads that other
// replicas asked for are not announced again. The Local feed has no
// other replica to ask.
func (p *Policies) OnAttempt(surface string) func(string, *policystatus.Attempt, error) {
	return func(trigger string, at *policystatus.Attempt, err error) {
		if trigger != policy.TriggerAdmin && trigger != policy.TriggerWatch {
			return
		}
		ctx, cancel := context.WithTimeout(p.Ctx, announceTimeout)
		defer cancel()
		r := gateway.PolicyRequest{Surface: surface, Revision: at.Revision, Origin: p.Origin}
		if err == nil && at.TestsFrom != "" && len(p.Secret) > 0 {
			r.Tested, r.Tests = at.Content, at.Tests
			r.Seal = Seal(p.Secret, r)
		}
		if err := p.Feed.AnnouncePolicy(ctx, r); err != nil && p.Ctx.Err() == nil {
			p.Log.Warn("policy reloaded here, but the other replicas could not be asked to reload; they reload on their next folder change, or run `mcpgate policy reload` against each",
				zap.String("surface", surface), zap.Error(err))
		}
	}
}

// Requested runs, on this replica, the reload another replica asked for
// (r.Origin set) or the check after the announcements resumed (no
// Origin): each surface r names ("" all) reloads its folder when the
// folder's bytes changed (policy.Live.ReloadIfChanged). A candidate of
// the bytes the announcing replica tested (r.Tested) goes live without
// running its tests again, unless Retest is set; any other is tested here
// in full. A refused candidate leaves this replica's live revision in
// place; Reload logs it and counts it
// (mcpgate_policy_reload_failures_total), and /readyz names the refused
// revision.
func (p *Policies) Requested(r gateway.PolicyRequest) {
	if r.Origin == p.Origin {
		return
	}
	trigger := policy.TriggerReplica
	if r.Origin == "" {
		trigger = policy.TriggerResync
	}
	var vouch *policy.Vouch
	if r.Tested != "" && !p.Retest && Sealed(p.Secret, r) {
		vouch = &policy.Vouch{Content: r.Tested, Tests: r.Tests}
	}
	for _, l := range p.Lives {
		if r.Surface != "" && r.Surface != l.Surface() {
			continue
		}
		at, err := l.ReloadIfChanged(p.Ctx, trigger, vouch)
		switch {
		case at == nil && err == nil:
			p.Log.Debug("policy reload asked by another replica: this replica's folder has the revision it already ran",
				zap.String("surface", l.Surface()), zap.String("requested_revision", r.Revision))
		case at == nil: // the embedded bundle never reloads
			p.Log.Warn("another replica asked every replica to reload its policy folder, but this one serves its embedded bundle; start every replica with the same MCPGATE_POLICY_DIR",
				zap.String("surface", l.Surface()), zap.String("requested_revision", r.Revision))
		case r.Revision != "" && at.Revision != r.Revision:
			p.Log.Warn("policy reloaded as another replica asked, but this replica's folder holds another revision than that replica loaded; give every replica the same policy folder",
				zap.String("surface", l.Surface()), zap.String("requested_revision", r.Revision),
				zap.String("candidate_revision", at.Revision), zap.String("outcome", at.Outcome))
		}
	}
}

// Seal is the seal of r's vouch (gateway.PolicyRequest.Seal): an
// HMAC-SHA256 of its surface, content hash and test count under a key
// derived from secret, the replicas' shared MCPGATE_SESSION_SECRET. A
// replayed seal vouches only for bytes whose tests passed on a replica.
func Seal(secret []byte, r gateway.PolicyRequest) string {
	k := hmac.New(sha256.New, secret)
	k.Write([]byte("mcpgate policy vouch v1"))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(r.Surface + "\x00" + r.Tested + "\x00" + strconv.Itoa(r.Tests)))
	return hex.EncodeToString(m.Sum(nil))
}

// Sealed reports whether r's seal is Seal's under secret; never without a
// secret (each process then has a key of its own).
func Sealed(secret []byte, r gateway.PolicyRequest) bool {
	return len(secret) > 0 && hmac.Equal([]byte(r.Seal), []byte(Seal(secret, r)))
}
