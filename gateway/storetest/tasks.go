package storetest

import (
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// taskTests: EnsureTask registers a task the store has never seen as
// running, once, and leaves a known task as it is.
var taskTests = []test{
	{"NewTaskIsRunning", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		task, err := s.EnsureTask(ctx(t), "ws-a", "t-new")
		must(t, err, "EnsureTask")
		if task.WorkspaceID != "ws-a" || task.ID != "t-new" || task.Status != gateway.TaskRunning || task.UpdatedAt.IsZero() {
			t.Fatalf("task = %+v, want t-new of ws-a, running, with its time", task)
		}
		c, err := s.LoadCaller(ctx(t), &gateway.Principal{Subject: "u1", WorkspaceID: "ws-a", TaskID: "t-new"})
		must(t, err, "LoadCaller")
		if c.Task == nil || c.Task.Status != gateway.TaskRunning || !c.Task.UpdatedAt.Equal(task.UpdatedAt) {
			t.Fatalf("LoadCaller task = %+v, want %+v", c.Task, task)
		}
	}},
	{"KnownTaskIsLeftAsItIs", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		done := &gateway.Task{WorkspaceID: "ws-a", ID: "t-done", Status: gateway.TaskCompleted}
		must(t, s.PutTask(ctx(t), done), "PutTask")
		task, err := s.EnsureTask(ctx(t), "ws-a", "t-done")
		must(t, err, "EnsureTask")
		if task.Status != gateway.TaskCompleted || !task.UpdatedAt.Equal(done.UpdatedAt) {
			t.Fatalf("task = %+v, want the stored %+v unchanged", task, done)
		}
	}},
	{"SameIDInAnotherWorkspace", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		putWorkspace(t, s, "ws-b")
		must(t, s.PutTask(ctx(t), &gateway.Task{WorkspaceID: "ws-b", ID: "t1", Status: gateway.TaskCancelled}), "PutTask")
		task, err := s.EnsureTask(ctx(t), "ws-a", "t1")
		must(t, err, "EnsureTask")
		if task.WorkspaceID != "ws-a" || task.Status != gateway.TaskRunning {
			t.Fatalf("task = %+v, want t1 of ws-a registered as running", task)
		}
	}},
	{"UnknownWorkspace", func(t *testing.T, s Store) {
		_, err := s.EnsureTask(ctx(t), "ws-9", "t1")
		wantCode(t, err, gateway.ENotFound, "EnsureTask in ws-9")
	}},
	{"Concurrent", func(t *testing.T, s Store) {
		putWorkspace(t, s, "ws-a")
		const n = 16
		var wg sync.WaitGroup
		tasks := make([]*gateway.Task, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { tasks[i], errs[i] = s.EnsureTask(ctx(t), "ws-a", "t-race") })
		}
		wg.Wait()
		for i := range n {
			must(t, errs[i], "concurrent EnsureTask")
			if tasks[i].Status != gateway.TaskRunning || !tasks[i].UpdatedAt.Equal(tasks[0].UpdatedAt) {
				t.Fatalf("call %d saw %+v, call 0 %+v: want one row, running", i, tasks[i], tasks[0])
			}
		}
	}},
}
