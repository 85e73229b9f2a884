// Package approvals holds the approvals a person decides before a tool call
// runs (docs/requirements.md#cc-approval: a tool that declares
// requiresApproval, or an action-class tool whose guard answered prompt).
//
// An approval is bound to one exact call: the principal (kind, subject,
// workspace), the tool, the canonical argument hash the audit row holds
// and the policy revision. The call waits while it is pending, bounded by
// the approval's TTL and the request's context; a person approves or
// rejects it through the admin API, or, when the calling client declared
// the elicitation capability, answers an elicitation in that client. An
// approved approval is used once, atomically in the store, and only then
// does its call run; a changed argument finds no approval and needs a
// new one. With no person who could decide — no admin approvals stream
// open on any replica and a client that cannot be asked — the call is
// refused at once ("Eine prompt-Entscheidung ohne verbundene zuständige
// Person wird abgelehnt").
//
// Approvals live in the store, so any replica serves any step: a waiting
// call polls the store at a short interval (PollInterval) and is woken at
// once by a decision made through its own replica.
//
// The package also holds the records the stores keep (Approval, Key,
// Filter) and the backend's human gates (Gate, HumanGates: an adapter's
// optional interface), which the admin API and the console show beside
// the approvals. It imports only the domain package and canon, so the
// stores, the admin API, the console and the adapters import it without
// linking anything else; it declares the Store it consumes.
package approvals

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Store is what approvals need of the audit store; the PostgreSQL and
// embedded stores implement it (gateway/internal/sqlcore, approvals.go,
// has each method's contract).
type Store interface {
	CreateApproval(ctx context.Context, a *Approval) error
	Approval(ctx context.Context, id string) (*Approval, error)
	OpenApproval(ctx context.Context, k Key, now time.Time) (*Approval, error)
	ListApprovals(ctx context.Context, f Filter) ([]Approval, error)
	DecideApproval(ctx context.Context, id, status, decidedBy, reason string, at time.Time) (*Approval, error)
	ExpireApproval(ctx context.Context, id string, at time.Time) (*Approval, error)
	UseApproval(ctx context.Context, id, argumentsHash string, at time.Time) (*Approval, error)
	TouchApprovalWatcher(ctx context.Context, id string, until time.Time) error
	DeleteApprovalWatcher(ctx context.Context, id string) error
	ApprovalWatchers(ctx context.Context, now time.Time) (int, error)
}

// Defaults of Options.
const (
	// DefaultTTL is how long an approval waits for a decision
	// (MCPGATE_APPROVAL_TTL).
	DefaultTTL = 10 * time.Minute
	// DefaultPollInterval is how often a waiting call reads its approval
	// from the store, to see a decision made through another replica.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultStreamPoll is how often an open admin approvals stream reads
	// the pending approvals, to see those of other replicas.
	DefaultStreamPoll = time.Second
	// DefaultWatcherTTL is how long the store counts an admin approvals
	// stream as open without a renewal; a stream renews it every third of
	// it, so a replica that dies stops counting as a person within it.
	DefaultWatcherTTL = 15 * time.Second
	// DefaultPresenceTTL is how long an approver counts as connected
	// after the last renewal by Present: the console's approvals page
	// renews it on every load and reloads itself every 5 s, so an
	// operator counts while the page is open and for at most this long
	// after it was closed.
	DefaultPresenceTTL = 15 * time.Second
)

// MaxArgumentsBytes bounds the canonical arguments an approval stores and
// shows (64 KiB): a call whose arguments are longer is refused, never
// shown cut, since a person must see all of what they approve.
const MaxArgumentsBytes = 64 << 10

// MaxPendingPerPrincipal bounds the approvals one principal (kind,
// subject, workspace) has pending at once: each holds a waiting call and
// a row, and asks a person's attention. A call that would need one more is
// refused as rate limited until some are decided or expire.
const MaxPendingPerPrincipal = 16

// Options tune a Service; zero values take the defaults.
type Options struct {
	TTL, PollInterval, StreamPoll, WatcherTTL, PresenceTTL time.Duration
	// Now is the clock of approvals' times; nil means time.Now.
	Now func() time.Time
}

// Service creates approvals, waits for their decisions and serves the admin
// API's approval requests. It is safe for concurrent use.
type Service struct {
	store Store
	o     Options

	createMu sync.Mutex // one pending count and insert at a time (create)

	mu      sync.Mutex
	changed chan struct{} // closed, and replaced, on every change made here
	streams int           // admin approvals streams open on this replica
}

// New returns a Service over store.
func New(store Store, o Options) *Service {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.StreamPoll <= 0 {
		o.StreamPoll = DefaultStreamPoll
	}
	if o.WatcherTTL <= 0 {
		o.WatcherTTL = DefaultWatcherTTL
	}
	if o.PresenceTTL <= 0 {
		o.PresenceTTL = DefaultPresenceTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{store: store, o: o, changed: make(chan struct{})}
}

// TTL is how long an approval created now waits for a decision.
func (s *Service) TTL() time.Duration { return s.o.TTL }

func (s *Service) now() time.Time { return s.o.Now().UTC().Truncate(time.Microsecond) }

// wait returns a channel closed by the next change made through this
// Service (a decision, a new approval).
func (s *Service) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// notify wakes everything waiting on wait.
func (s *Service) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

// newID returns a fresh approval id: "apr_" and 26 base32 characters (128
// random bits).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return "apr_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Reachable reports whether a person could decide an approval now, apart
// from the calling client's user: an admin approvals stream is open on this
// replica or, as the store records, on another one, or an approver renewed
// their presence (Present) within PresenceTTL.
func (s *Service) Reachable(ctx context.Context) (bool, error) {
	s.mu.Lock()
	local := s.streams
	s.mu.Unlock()
	if local > 0 {
		return true, nil
	}
	n, err := s.store.ApprovalWatchers(ctx, s.now())
	return n > 0, err
}

// List returns the approvals f selects (the admin API's GET
// /admin/v1/approvals); for status pending, only those still open now.
func (s *Service) List(ctx context.Context, f Filter) ([]Approval, error) {
	if f.Status == StatusPending && f.Now.IsZero() {
		f.Now = s.now()
	}
	return s.store.ListApprovals(ctx, f)
}

// Decide approves or rejects (status StatusApproved or
// StatusRejected) the pending approval id in the name of
// decidedBy, and wakes the call waiting for it on this replica (the store
// tells those of other replicas). EInvalid when decidedBy is empty,
// ENotFound for an unknown id, EConflict when it is no longer pending
// (decided, expired or used) saying what it is.
func (s *Service) Decide(ctx context.Context, id, status, decidedBy, reason string) (*Approval, error) {
	if strings.TrimSpace(decidedBy) == "" {
		return nil, gateway.Errorf(gateway.EInvalid, "decided_by is required: name the person who decides approval %s", id)
	}
	a, err := s.store.DecideApproval(ctx, id, status, decidedBy, reason, s.now())
	if err == nil {
		s.notify()
	}
	return a, err
}

// Present records, in the store, that the approver id is connected
// without a stream: an operator who has the console's approvals page open
// (id is bound to their console session). The approver counts on every
// replica until PresenceTTL from now; each call renews it, and Absent
// ends it at once. id must not collide with a stream's ("watch_…").
func (s *Service) Present(ctx context.Context, id string) error {
	return s.store.TouchApprovalWatcher(ctx, id, s.now().Add(s.o.PresenceTTL))
}

// PresenceTTL is how long an approver recorded by Present counts as
// connected without a renewal.
func (s *Service) PresenceTTL() time.Duration { return s.o.PresenceTTL }

// Absent ends the presence of approver id (the operator signed out);
// an unknown id is no error.
func (s *Service) Absent(ctx context.Context, id string) error {
	return s.store.DeleteApprovalWatcher(ctx, id)
}
