package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/console"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// slowChain is the store's audit chain with a verification that takes
// delay (a long trail).
type slowChain struct {
	*sqlite.Store
	delay time.Duration
}

func (s slowChain) VerifyAuditChain(ctx context.Context) (auditchain.Report, error) {
	time.Sleep(s.delay)
	return s.Store.VerifyAuditChain(ctx)
}

// A verification the audit page asks for that outlasts the server's write
// timeout (which counts from the request) still shows its page: the page
// gets a write deadline of its own once the verification is done.
func TestAuditVerifyOutlastsTheWriteTimeout(t *testing.T) {
	g := newGateway(t)
	api := admin.NewHandler(g.store, admin.Options{Token: adminToken, Chain: slowChain{g.store, 1500 * time.Millisecond}})
	mux := http.NewServeMux()
	mux.Handle(admin.Prefix+"/", api)
	c := console.New(console.Options{Admin: api, AdminPrefix: admin.Prefix})
	mux.Handle(console.Prefix, c)
	mux.Handle(console.Prefix+"/", c)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.WriteTimeout = time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	g.srv = srv
	v := g.signedIn(t)
	if p := v.get("/console/audit?verify=1"); p.status != http.StatusOK || !strings.Contains(p.text, "<strong>yes</strong>: 0 rows recomputed") {
		t.Fatalf("the audit page verifying past the write timeout: %d\n%s", p.status, p.text)
	}
}
