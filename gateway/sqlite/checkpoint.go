package sqlite

import (
	"context"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// Checkpoints: SQLite copies the WAL back into the database file (and
// fsyncs both) in a checkpoint. Left to itself, the write connection does
// that inside the commit that grows the WAL past wal_autocheckpoint pages,
// so about one call in a hundred waited for two fsyncs before its reply
// (the p99 of a single client). The store instead checkpoints from a
// connection of its own every checkpointInterval (PASSIVE: it never
// blocks the writer or a reader), and the write connection keeps a
// checkpoint of its own only as a backstop for a WAL that the background
// pass cannot keep short (walBackstopPages). Durability is unchanged: a
// commit is in the WAL before the call goes on, checkpointed or not.
const (
	checkpointInterval = 100 * time.Millisecond
	// checkpointTimeout bounds one background pass.
	checkpointTimeout = 5 * time.Second
	// walBackstopPages is the write connection's wal_autocheckpoint (4,000
	// pages of 4 KiB, 16 MiB of WAL); SQLite's default is 1,000.
	walBackstopPages = "4000"
)

// checkpointer runs PASSIVE checkpoints on db until close.
type checkpointer struct {
	db     *sqlx.DB
	stop   chan struct{}
	done   sync.WaitGroup
	closed sync.Once
	err    error // of closing db
}

// startCheckpointer starts the background checkpoints on db (a pool of
// one connection of its own).
func startCheckpointer(db *sqlx.DB) *checkpointer {
	c := &checkpointer{db: db, stop: make(chan struct{})}
	c.done.Go(c.run)
	return c
}

func (c *checkpointer) run() {
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
		// A failed pass is not an error of any call: the next pass, or the
		// writer's backstop, checkpoints instead.
		_, _ = c.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		cancel()
	}
}

// close stops the checkpoints and closes their connection; closing again
// does nothing more.
func (c *checkpointer) close() error {
	c.closed.Do(func() {
		close(c.stop)
		c.done.Wait()
		c.err = c.db.Close()
	})
	return c.err
}
