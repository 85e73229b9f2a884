package policy

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// Watch watches the policy folder (and the shadow folder, when set), with
// every folder below them, and reloads (Reload with TriggerWatch) once a
// change has been followed by LiveOptions.Debounce of quiet. It returns
// once the watch is set up; the watch ends with ctx. For the embedded
// bundle it does nothing and returns nil. An error means the folders could
// not be watched (the gateway still runs its current bundle and reloads
// through the admin API).
func (l *Live) Watch(ctx context.Context) error {
	if l.opts.Dir == "" {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("policy: watch %s: %w", l.opts.Dir, err)
	}
	roots := []string{l.opts.Dir}
	if l.opts.ShadowDir != "" {
		roots = append(roots, l.opts.ShadowDir)
	}
	for _, r := range roots {
		if err := addTree(w, r); err != nil {
			_ = w.Close()
			return fmt.Errorf("policy: watch %s: %w", r, err)
		}
	}
	go l.watchLoop(ctx, w, roots)
	return nil
}

// watchLoop debounces w's events into reloads until ctx ends.
func (l *Live) watchLoop(ctx context.Context, w *fsnotify.Watcher, roots []string) {
	defer w.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) {
				_ = addTree(w, ev.Name) // a new folder: watch it too (a file: nothing to add)
			}
			timer.Reset(l.opts.Debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			l.log.Warn("policy folder watch reported an error; changes may be missed until the next one, `mcpgate policy reload` reloads at once",
				zap.Strings("dirs", roots), zap.Error(err))
		case <-timer.C:
			for _, r := range roots { // folders made while the timer ran
				_ = addTree(w, r)
			}
			_, _ = l.Reload(ctx, TriggerWatch) // the outcome is logged, counted and in Status
		}
	}
}

// addTree watches dir and every folder below it that is not hidden (a
// path that is not a folder is ignored). A dir that is a symbolic link is
// watched where it points (WalkDir would not enter it): changes inside the
// linked folder reload; pointing the link elsewhere is not seen, so a
// deploy that switches the link runs `mcpgate policy reload`.
func addTree(w *fsnotify.Watcher, dir string) error {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		return w.Add(p)
	})
}
