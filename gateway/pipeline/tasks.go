package pipeline

import (
	"context"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/store"
)

// TaskStore is what registering tasks needs of the store: the caller load
// and the idempotent registration of a task (Store has both).
type TaskStore interface {
	CallerLoader
	store.Tasks
}

// RegisterTasks returns the CallerLoader of the request path: it loads
// callers from s and registers, as running, a task the store has never
// seen, on the first request of the session that names it. A validly
// signed token is the platform's word that its task exists, so a new task
// needs no setup; the admin API sets its terminal status later, and the
// policy then refuses its calls. Only the task of a workspace member is
// registered (the policy refuses a non-member before it looks at the
// task), and only when the load found none, so the hot path stays one
// read: the wiring puts the caller cache in front of this loader, so that
// the cache holds the registered task. The returned Caller is a new value;
// s's is not modified.
func RegisterTasks(s TaskStore) CallerLoader { return taskRegistrar{s} }

type taskRegistrar struct{ s TaskStore }

func (r taskRegistrar) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	c, err := r.s.LoadCaller(ctx, p)
	if err != nil || c.Task != nil || c.Member == nil || p.TaskID == "" {
		return c, err
	}
	task, err := r.s.EnsureTask(ctx, p.WorkspaceID, p.TaskID)
	if err != nil {
		return nil, err
	}
	out := *c
	out.Task = task
	return &out, nil
}
