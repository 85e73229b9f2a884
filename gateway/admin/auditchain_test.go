package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/auditchain"
	"github.com/mcpgate/mcpgate/gateway/store"
)

// fakeChain is an audit chain of a head, an optional latest checkpoint
// and a verification's report; the other methods are not called.
type fakeChain struct {
	store.AuditChain
	head  auditchain.Head
	cp    *auditchain.Checkpoint
	rep   auditchain.Report
	delay time.Duration // how long a verification takes
}

func (f fakeChain) AuditChainHead(context.Context) (auditchain.Head, error) { return f.head, nil }

func (f fakeChain) LatestAuditCheckpoint(context.Context, time.Time) (auditchain.Checkpoint, bool, error) {
	if f.cp == nil {
		return auditchain.Checkpoint{}, false, nil
	}
	return *f.cp, true, nil
}

func (f fakeChain) VerifyAuditChain(context.Context) (auditchain.Report, error) {
	time.Sleep(f.delay)
	return f.rep, nil
}

// testChain is a chain of 42 sealed rows, a signed checkpoint at seq 40,
// and a verification that verified, or (broken) names seq 7 changed.
func testChain(broken bool) fakeChain {
	h := auditchain.Head{Seq: 42, Hash: auditchain.Hash{0xab}}
	cp := &auditchain.Checkpoint{Seq: 40, Hash: auditchain.Hash{0xcd}, Time: testNow, KeyID: "0123456789abcdef", Signature: []byte{1, 2}}
	rep := auditchain.Report{Verified: 42, Head: h, Unsealed: 3}
	if broken {
		rep.Verified, rep.Problem = 6, &auditchain.Problem{Seq: 7, What: auditchain.Changed, Detail: "row id 7 no longer hashes to its stored hash"}
	}
	return fakeChain{head: h, cp: cp, rep: rep}
}

// GET /audit-chain shows the head and the latest checkpoint (none before
// the first); GET /audit-chain/verify the verification, with the first
// problem when the chain does not hold; both are the admin token's only,
// and 404 without a chain.
func TestAuditChainRoutes(t *testing.T) {
	get := func(t *testing.T, opts Options, path string, header *string) (int, map[string]any) {
		t.Helper()
		opts.Token = adminToken
		rec := serve(NewHandler(newFakeStore(), opts), http.MethodGet, Prefix+path, "", header)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	status, out := get(t, Options{Chain: testChain(false)}, "/audit-chain", nil)
	head, _ := out["head"].(map[string]any)
	cp, _ := out["checkpoint"].(map[string]any)
	if status != 200 || head["seq"] != 42.0 || !strings.HasPrefix(head["hash"].(string), "ab00") || cp["seq"] != 40.0 || cp["signed"] != true || cp["key_id"] != "0123456789abcdef" {
		t.Errorf("GET /audit-chain: %d %v", status, out)
	}
	unsigned := testChain(false)
	unsigned.cp = nil
	if status, out := get(t, Options{Chain: unsigned}, "/audit-chain", nil); status != 200 || out["checkpoint"] != nil {
		t.Errorf("GET /audit-chain before a checkpoint: %d %v; want no checkpoint", status, out)
	}
	status, out = get(t, Options{Chain: testChain(false)}, "/audit-chain/verify", nil)
	if status != 200 || out["verified"] != true || out["rows"] != 42.0 || out["unsealed"] != 3.0 || out["problem"] != nil {
		t.Errorf("GET /audit-chain/verify: %d %v", status, out)
	}
	status, out = get(t, Options{Chain: testChain(true)}, "/audit-chain/verify", nil)
	p, _ := out["problem"].(map[string]any)
	if status != 200 || out["verified"] != false || out["rows"] != 6.0 || p["seq"] != 7.0 || p["what"] != "changed" {
		t.Errorf("GET /audit-chain/verify of a broken chain: %d %v", status, out)
	}
	if status, out := get(t, Options{}, "/audit-chain", nil); status != 404 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "no audit chain") {
		t.Errorf("GET /audit-chain without a chain: %d %v", status, out)
	}
	readerAuth := "Bearer scmt_reader"
	reader := Options{Chain: testChain(false), TokenReader: func(*http.Request) (string, bool) { return "ws-1", true }}
	if status, _ := get(t, reader, "/audit-chain/verify", &readerAuth); status != http.StatusForbidden {
		t.Errorf("a management:read token verified the chain: %d, want 403", status)
	}
}

// A verification that outlasts the server's write timeout (a long trail)
// still gets its reply through: the reply's deadline counts from when it
// is ready.
func TestAuditChainVerifyOutlastsTheWriteTimeout(t *testing.T) {
	chain := testChain(false)
	chain.delay = 300 * time.Millisecond
	srv := httptest.NewUnstartedServer(NewHandler(newFakeStore(), Options{Token: adminToken, Chain: chain}))
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+Prefix+"/audit-chain/verify", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("GET /audit-chain/verify past the write timeout: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"verified":true`) {
		t.Fatalf("GET /audit-chain/verify past the write timeout: %d %s %v", resp.StatusCode, body, err)
	}
}
