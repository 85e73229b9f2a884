package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// failingAudit is a store that cannot insert audit rows.
type failingAudit struct{ *sqlite.Store }

func (failingAudit) RecordAudit(context.Context, *gateway.AuditEvent) error {
	return gateway.Errorf(gateway.EUnavailable, "audit store unavailable")
}

// Issue 8, point 5: raw newlines and ANSI escape bytes in a tool name
// reached audit rows and log lines. They are stored and logged escaped, as
// Go quotes them; printable Unicode stays as it is.
func TestToolNameControlCharactersAreEscaped(t *testing.T) {
	const name = "evil\n\x1b[31mtool\r\tü"
	const want = `"evil\n\x1b[31mtool\r\tü"`
	f := newFixture(t)
	if err := f.call("t1", name, nil); err == nil {
		t.Fatal("an unknown tool was not refused")
	}
	if got := f.last(t).Tool; got != want {
		t.Errorf("audit row tool %q, want %q", got, want)
	}

	core, logs := observer.New(zap.InfoLevel)
	f.pl.Logger = zap.New(core)
	f.pl.Store = failingAudit{f.store}
	_, _ = f.pl.CallTool(context.Background(), f.p, &gateway.CallRequest{Name: name})
	entries := logs.FilterField(zap.String("tool", want)).All()
	if len(entries) == 0 {
		t.Fatalf("no log line with the escaped tool name; logged: %+v", logs.All())
	}
	for _, e := range logs.All() {
		for _, fld := range e.Context {
			if strings.ContainsAny(fld.String, "\n\x1b\r") {
				t.Errorf("log field %s holds a raw control character: %q", fld.Key, fld.String)
			}
		}
	}
	// Printable names, Unicode included, are not quoted.
	f = newFixture(t)
	_ = f.call("t1", "outil.é", nil)
	if got := f.last(t).Tool; got != "outil.é" {
		t.Errorf("audit row tool %q, want outil.é unchanged", got)
	}
}
