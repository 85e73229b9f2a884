package replica

import (
	"context"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway/postgres"
)

// RelayAnswerStore is what Answers needs of the database: the
// table of relayed requests awaiting their answer (PostgreSQL migration
// 00013; *postgres.Store implements it, the embedded store needs none).
type RelayAnswerStore interface {
	ExpectRelayAnswer(ctx context.Context, key, owner string, until time.Time) error
	DeliverRelayAnswer(ctx context.Context, key, owner string, answer []byte) (bool, error)
	RelayAnswer(ctx context.Context, key string) ([]byte, bool, error)
	ForgetRelayAnswer(ctx context.Context, key string) error
	// DeleteExpiredRelayAnswers deletes the records that expired at or
	// before before (of replicas that stopped during a call).
	DeleteExpiredRelayAnswers(ctx context.Context, before time.Time) (int64, error)
}

var _ RelayAnswerStore = (*postgres.Store)(nil)

// answerPoll is how often a waiting request reads its record even without
// an announcement: the bound on how late an answer recorded by another
// replica arrives while the listening connection is down.
const answerPoll = time.Second

// Answers is the mcp.RelayAnswers of replicas on one PostgreSQL: a
// waiting request is a row; the replica the client's response reaches
// fills it in and announces its key (postgres.RelayChannel); the replica
// holding the request reads it at once on the announcement, or within
// answerPoll without one.
type Answers struct {
	s RelayAnswerStore

	mu      sync.Mutex
	waiting map[string]chan struct{} // key → kicked by the announcement
}

// NewAnswers returns the relayed answers kept in s; Answered must be told
// the announced keys (Coordinator.OnAnswer).
func NewAnswers(s RelayAnswerStore) *Answers {
	return &Answers{s: s, waiting: map[string]chan struct{}{}}
}

// Expect implements mcp.RelayAnswers.
func (a *Answers) Expect(ctx context.Context, key, owner string, until time.Time, deliver func([]byte)) (func(), error) {
	if err := a.s.ExpectRelayAnswer(ctx, key, owner, until); err != nil {
		return nil, err
	}
	kick := make(chan struct{}, 1)
	a.mu.Lock()
	a.waiting[key] = kick
	a.mu.Unlock()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(answerPoll)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-kick:
			case <-tick.C:
			}
			rctx, cancel := context.WithTimeout(context.Background(), answerPoll)
			answer, ok, err := a.s.RelayAnswer(rctx, key)
			cancel()
			if err == nil && ok {
				deliver(answer)
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			a.mu.Lock()
			delete(a.waiting, key)
			a.mu.Unlock()
			fctx, cancel := context.WithTimeout(context.Background(), answerPoll)
			defer cancel()
			_ = a.s.ForgetRelayAnswer(fctx, key) // else swept once expired
		})
	}, nil
}

// Deliver implements mcp.RelayAnswers.
func (a *Answers) Deliver(ctx context.Context, key, owner string, answer []byte) (bool, error) {
	return a.s.DeliverRelayAnswer(ctx, key, owner, answer)
}

// Answered is told by the feed that key's answer was recorded.
func (a *Answers) Answered(key string) {
	a.mu.Lock()
	kick := a.waiting[key]
	a.mu.Unlock()
	if kick != nil {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}
