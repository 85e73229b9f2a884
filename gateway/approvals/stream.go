package approvals

import (
	"context"
	"time"
)

// Watch registers an open admin approvals stream (GET
// /admin/v1/approvals/stream) until ctx ends: while it is open, an
// approver counts as connected on every replica (the store records it,
// renewed every third of WatcherTTL), so calls that need an approval wait
// for one instead of being refused. The channel yields each pending
// approval once when the stream opens and whenever one appears (on any
// replica: read every StreamPoll, at once for those of this replica),
// and each approval again when it leaves pending (decided, expired or
// used). It is closed when ctx ends or the store fails. An error means
// the stream could not be recorded; nothing was registered.
func (s *Service) Watch(ctx context.Context) (<-chan Approval, error) {
	id := "watch_" + newID()[len("apr_"):]
	if err := s.store.TouchApprovalWatcher(ctx, id, s.now().Add(s.o.WatcherTTL)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.streams++
	s.mu.Unlock()
	out := make(chan Approval, 16)
	go s.stream(ctx, id, out)
	return out, nil
}

func (s *Service) stream(ctx context.Context, id string, out chan<- Approval) {
	defer func() {
		s.mu.Lock()
		s.streams--
		s.mu.Unlock()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.store.DeleteApprovalWatcher(dctx, id) // else it lapses within WatcherTTL
		close(out)
	}()
	poll := time.NewTicker(s.o.StreamPoll)
	defer poll.Stop()
	renew := time.NewTicker(s.o.WatcherTTL / 3)
	defer renew.Stop()
	seen := map[string]bool{} // pending approvals sent
	send := func(a Approval) bool {
		select {
		case out <- a:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		changed := s.wait()
		pending, err := s.List(ctx, Filter{Status: StatusPending, Limit: 1000})
		if err != nil {
			return
		}
		now := map[string]bool{}
		for _, a := range pending {
			now[a.ID] = true
			if !seen[a.ID] && !send(a) {
				return
			}
		}
		for gone := range seen {
			if now[gone] {
				continue
			}
			a, err := s.store.Approval(ctx, gone)
			if err == nil && a.Status == StatusPending { // lapsed with no call waiting to mark it
				a.Status = StatusExpired
			}
			if err == nil && !send(*a) {
				return
			}
		}
		seen = now
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-poll.C:
		case <-renew.C:
			if err := s.store.TouchApprovalWatcher(ctx, id, s.now().Add(s.o.WatcherTTL)); err != nil {
				return
			}
		}
	}
}
