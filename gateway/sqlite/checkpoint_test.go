package sqlite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// The WAL is copied into the database file in the background, without a
// commit growing it to the writer's own checkpoint threshold: rows far
// fewer than that threshold's pages reach the database file within a few
// checkpoint intervals.
func TestBackgroundCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.db")
	s := newStore(t, path)
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	time.Sleep(300 * time.Millisecond) // the migrations' own pages settle
	before := size()
	args := json.RawMessage(`{"pad":"` + strings.Repeat("x", 2000) + `"}`)
	for range 200 { // about 100 pages, well under the writer's 4,000
		ev := &gateway.AuditEvent{WorkspaceID: "ws-a", Tool: "echo", Status: gateway.AuditAllowed, Arguments: args}
		if err := s.RecordAudit(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for size() < before+200*2000 {
		if time.Now().After(deadline) {
			t.Fatalf("database file %d bytes 5 s after 200 rows of 2 kB (%d before): the WAL was not checkpointed", size(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
