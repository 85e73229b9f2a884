package storetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// pin is a pinned definition of tool of upstream forge on SupaCloud.
func pin(tool, hash string, now time.Time) gateway.ToolPin {
	return gateway.ToolPin{Surface: gateway.SurfaceSupaCloud, Upstream: "forge", Tool: tool, State: gateway.PinPinned,
		Hash: hash, Definition: json.RawMessage(`{"name":"` + tool + `"}`), UpdatedAt: now}
}

var pinTests = []test{
	{"a tool's first sight pins it once; a second sight keeps the first", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		ok, err := s.AddToolPin(ctx(t), pin("issues.list", "sha256:a", now))
		must(t, err, "AddToolPin")
		again, err := s.AddToolPin(ctx(t), pin("issues.list", "sha256:b", now))
		must(t, err, "AddToolPin again")
		if !ok || again {
			t.Fatalf("AddToolPin inserted %v, then %v; want true, false", ok, again)
		}
		pins, err := s.ToolPins(ctx(t))
		must(t, err, "ToolPins")
		if len(pins) != 1 || pins[0].Hash != "sha256:a" || pins[0].State != gateway.PinPinned ||
			string(pins[0].Definition) != `{"name":"issues.list"}` || !pins[0].UpdatedAt.Equal(now) || pins[0].DecidedAt != nil {
			t.Errorf("ToolPins = %+v; want the first pin as added", pins)
		}
	}},
	{"of replicas pinning a tool at once exactly one inserts", func(t *testing.T, s Store) {
		now := time.Now().UTC()
		var wg sync.WaitGroup
		var mu sync.Mutex
		inserted := 0
		for range 8 {
			wg.Go(func() {
				ok, err := s.AddToolPin(ctx(t), pin("race", "sha256:r", now))
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if ok {
					inserted++
				}
			})
		}
		wg.Wait()
		if inserted != 1 {
			t.Errorf("%d of 8 concurrent first sights inserted; want 1", inserted)
		}
	}},
	{"of replicas quarantining one change at once exactly one writes it; a review older than a decision does not undo it", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		_, err := s.AddToolPin(ctx(t), pin("drift", "sha256:old", now))
		must(t, err, "AddToolPin")
		q := pin("drift", "sha256:old", now)
		q.State, q.Change, q.CurrentHash, q.Current = gateway.PinQuarantined, gateway.PinChangeDefinition, "sha256:new", json.RawMessage(`{"name":"drift","description":"new"}`)
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[gateway.ErrorCode]int{}
		for range 8 {
			wg.Go(func() {
				err := s.UpdateToolPin(ctx(t), q)
				mu.Lock()
				defer mu.Unlock()
				codes[gateway.ErrorCodeOf(err)]++
			})
		}
		wg.Wait()
		if codes[""] != 1 || codes[gateway.EConflict] != 7 {
			t.Errorf("8 concurrent quarantines of one change: %v; want 1 written and 7 EConflict", codes)
		}
		_, err = s.DecideToolPin(ctx(t), gateway.SurfaceSupaCloud, "forge", "drift", true, "ada", now)
		must(t, err, "approve")
		stale := q // reviewed against the pin before the approval, the upstream listing yet another definition
		stale.CurrentHash, stale.Current = "sha256:third", json.RawMessage(`{"name":"drift","description":"third"}`)
		wantCode(t, s.UpdateToolPin(ctx(t), stale), gateway.EConflict, "a quarantine reviewed against the pin before its approval")
		pins, err := s.ToolPins(ctx(t))
		must(t, err, "ToolPins")
		for _, p := range pins {
			if p.Tool == "drift" && (p.State != gateway.PinPinned || p.Hash != "sha256:new") {
				t.Errorf("after the stale review: %+v; want the approved definition still pinned", p)
			}
		}
	}},
	{"a quarantined tool is approved or rejected once, with decided_by", func(t *testing.T, s Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		for _, tool := range []string{"a", "b"} {
			_, err := s.AddToolPin(ctx(t), pin(tool, "sha256:old", now))
			must(t, err, "AddToolPin")
			q := pin(tool, "sha256:old", now)
			q.State, q.Change, q.CurrentHash, q.Current = gateway.PinQuarantined, gateway.PinChangeDefinition, "sha256:new", json.RawMessage(`{"name":"`+tool+`","description":"new"}`)
			must(t, s.UpdateToolPin(ctx(t), q), "UpdateToolPin")
		}
		_, err := s.DecideToolPin(ctx(t), gateway.SurfaceSupaCloud, "forge", "a", true, "", now)
		wantCode(t, err, gateway.EInvalid, "a decision without decided_by")
		got, err := s.DecideToolPin(ctx(t), gateway.SurfaceSupaCloud, "forge", "a", true, "ada", now)
		must(t, err, "approve")
		if got.State != gateway.PinPinned || got.Hash != "sha256:new" || string(got.Definition) != `{"name":"a","description":"new"}` ||
			got.CurrentHash != "" || got.Change != "" || got.DecidedBy != "ada" || got.DecidedAt == nil || !got.DecidedAt.Equal(now) {
			t.Errorf("approved pin = %+v; want the current definition pinned, decided by ada", got)
		}
		got, err = s.DecideToolPin(ctx(t), gateway.SurfaceSupaCloud, "forge", "b", false, "bob", now)
		must(t, err, "reject")
		if got.State != gateway.PinRejected || got.Hash != "sha256:old" || got.CurrentHash != "sha256:new" || got.DecidedBy != "bob" {
			t.Errorf("rejected pin = %+v; want the old pin kept, the change recorded as rejected by bob", got)
		}
		_, err = s.DecideToolPin(ctx(t), gateway.SurfaceSupaCloud, "forge", "a", false, "ada", now)
		wantCode(t, err, gateway.EConflict, "deciding a pinned tool")
		_, err = s.DecideToolPin(ctx(t), gateway.SurfaceSupaCloud, "forge", "nope", true, "ada", now)
		wantCode(t, err, gateway.ENotFound, "deciding an unknown tool")
		wantCode(t, s.UpdateToolPin(ctx(t), pin("nope", "sha256:x", now)), gateway.ENotFound, "updating an unknown pin")
		bad := pin("c", "", now)
		bad.State = "trusted"
		_, err = s.AddToolPin(ctx(t), bad)
		wantCode(t, err, gateway.EInvalid, "a pin of an unknown state")
	}},
}
