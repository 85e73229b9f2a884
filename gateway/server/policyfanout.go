package server

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
	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/gateway/postgres"
)

// surfacePolicies is the admin API's Policy over the live policy of every
// surface of this gateway (SupaCloud first, then cc_server when it is
// on). Status is the SupaCloud surface's (GET /admin/v1/policy); Reload
// reloads each surface's bundle from the policy folder, in that order, and
// answers with the SupaCloud surface's attempt (the others' outcomes are
// logged, counted and shown in /readyz).
type surfacePolicies struct {
	lives []*policy.Live // set while the App opens, read only afterwards
}

var _ admin.Policy = (*surfacePolicies)(nil)

// Status implements admin.Policy.
func (p *surfacePolicies) Status() policystatus.Status { return p.lives[0].Status() }

// Reload implements admin.Policy.
func (p *surfacePolicies) Reload(ctx context.Context, trigger string) (*policystatus.Attempt, error) {
	at, err := p.lives[0].Reload(ctx, trigger)
	if at == nil { // the embedded bundle: no surface reloads
		return at, err
	}
	for _, l := range p.lives[1:] {
		_, _ = l.Reload(ctx, trigger) // logged, counted and in Statuses
	}
	return at, err
}

// Statuses is the status of every surface, for /readyz.
func (p *surfacePolicies) Statuses() []policystatus.Status {
	out := make([]policystatus.Status, len(p.lives))
	for i, l := range p.lives {
		out[i] = l.Status()
	}
	return out
}

// newOrigin is a random id naming this process in the policy reload
// requests it announces.
func newOrigin() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// announceTimeout bounds how long a reload waits for its announcement to
// the other replicas.
const announceTimeout = 2 * time.Second

// announcePolicy returns the OnAttempt of surface's Live: a reload asked
// for on this replica (admin API, `mcpgate policy reload`, the folder
// watcher) is asked of every replica on the shared PostgreSQL, whatever
// its outcome here (each replica runs its own gated reload of its own
// folder). When the candidate passed, the announcement carries its
// content hash and test count: a replica whose folder holds the same
// bytes takes them without running the tests again. Reloads that other
// replicas asked for are not announced again. The embedded store serves
// one process: nothing to announce.
func (a *App) announcePolicy(log *zap.Logger, surface string) func(string, *policystatus.Attempt, error) {
	return func(trigger string, at *policystatus.Attempt, err error) {
		if trigger != policy.TriggerAdmin && trigger != policy.TriggerWatch {
			return
		}
		pg, ok := a.Store.(*postgres.Store)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(a.policyCtx, announceTimeout)
		defer cancel()
		r := gateway.PolicyRequest{Surface: surface, Revision: at.Revision, Origin: a.origin}
		if err == nil && at.TestsFrom != "" && len(a.Config.SessionSecret) > 0 {
			r.Tested, r.Tests = at.Content, at.Tests
			r.Seal = vouchSeal(a.Config.SessionSecret, r)
		}
		if err := pg.AnnouncePolicy(ctx, r); err != nil && a.policyCtx.Err() == nil {
			log.Warn("policy reloaded here, but the other replicas could not be asked to reload; they reload on their next folder change, or run `mcpgate policy reload` against each",
				zap.String("surface", surface), zap.Error(err))
		}
	}
}

// policyRequested runs, on this replica, the reload another replica asked
// for (r.Origin set) or the check after the announcements resumed (no
// Origin): each surface r names ("" all) reloads its folder when the
// folder's bytes changed (policy.Live.ReloadIfChanged). A candidate of
// the bytes the announcing replica tested (r.Tested) goes live without
// running its tests again, unless MCPGATE_POLICY_RETEST_ON_REPLICAS is
// set; any other is tested here in full. A refused candidate leaves this replica's live revision in place;
// Reload logs it and counts it (mcpgate_policy_reload_failures_total), and
// /readyz names the refused revision.
func (a *App) policyRequested(log *zap.Logger, r gateway.PolicyRequest) {
	if r.Origin == a.origin {
		return
	}
	trigger := policy.TriggerReplica
	if r.Origin == "" {
		trigger = policy.TriggerResync
	}
	var vouch *policy.Vouch
	if r.Tested != "" && !a.Config.PolicyRetestOnReplicas && vouchSealed(a.Config.SessionSecret, r) {
		vouch = &policy.Vouch{Content: r.Tested, Tests: r.Tests}
	}
	for _, l := range a.policies.lives {
		if r.Surface != "" && r.Surface != l.Surface() {
			continue
		}
		at, err := l.ReloadIfChanged(a.policyCtx, trigger, vouch)
		switch {
		case at == nil && err == nil:
			log.Debug("policy reload asked by another replica: this replica's folder has the revision it already ran",
				zap.String("surface", l.Surface()), zap.String("requested_revision", r.Revision))
		case at == nil: // the embedded bundle never reloads
			log.Warn("another replica asked every replica to reload its policy folder, but this one serves its embedded bundle; start every replica with the same MCPGATE_POLICY_DIR",
				zap.String("surface", l.Surface()), zap.String("requested_revision", r.Revision))
		case r.Revision != "" && at.Revision != r.Revision:
			log.Warn("policy reloaded as another replica asked, but this replica's folder holds another revision than that replica loaded; give every replica the same policy folder",
				zap.String("surface", l.Surface()), zap.String("requested_revision", r.Revision),
				zap.String("candidate_revision", at.Revision), zap.String("outcome", at.Outcome))
		}
	}
}

// vouchSeal is the seal of r's vouch (gateway.PolicyRequest.Seal): an
// HMAC-SHA256 of its surface, content hash and test count under a key
// derived from secret, the replicas' shared MCPGATE_SESSION_SECRET. A
// replayed seal vouches only for bytes whose tests passed on a replica.
func vouchSeal(secret []byte, r gateway.PolicyRequest) string {
	k := hmac.New(sha256.New, secret)
	k.Write([]byte("mcpgate policy vouch v1"))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(r.Surface + "\x00" + r.Tested + "\x00" + strconv.Itoa(r.Tests)))
	return hex.EncodeToString(m.Sum(nil))
}

// vouchSealed reports whether r's seal is vouchSeal's under secret; never
// without a secret (each process then has a key of its own).
func vouchSealed(secret []byte, r gateway.PolicyRequest) bool {
	return len(secret) > 0 && hmac.Equal([]byte(r.Seal), []byte(vouchSeal(secret, r)))
}
