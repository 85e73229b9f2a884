// Package layout checks that the module's imports point one way: domain
// types at the bottom, packages that wrap one dependency above them and
// beside each other, and only the composing packages seeing everything.
package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mcpgate/mcpgate"

// rule says which of the module's own packages the packages matching pkg
// may import ("x/..." matches x and everything below it). allow is for
// the package's own files, test for its _test files on top of allow. Any
// standard-library or third-party import is allowed, except those
// matching forbid.
type rule struct {
	pkg    string
	allow  []string
	test   []string
	forbid []string
	why    string
}

// Packages that wrap one dependency may import the domain package (and
// canon, the domain's one canonical form of arguments, which imports only
// the one JSON encoder of ours; and the one store contract) and their own
// internal helpers, never a sibling. A few standard-library packages
// beside the domain hold records that their owner and the stores (or the
// admin API and the console) share: approvals, the policy status, the
// console session. The composing packages import siblings: the pipeline
// only those it composes, the wiring (gateway/server, cmd) everything.
var (
	bottom = []string{"gateway", "gateway/canon", "gateway/store"}
	jsonw  = "gateway/internal/jsonw"
	// approvals holds the approval records the stores keep and the
	// backend's human gates, beside the code that waits for them; it
	// imports only the bottom, and the wire package for the elicitation
	// it asks a person through.
	approvals = "gateway/approvals"
	// consoleSession is a signed-in console visitor as the stores keep
	// it: the standard library only, so the stores do not link the
	// console.
	consoleSession = "gateway/console/consolesession"
	// auditChain is the chain over the audit trail: the row's canonical
	// form, its hash and the verifier, which the stores' shared core
	// seals and verifies with; the domain and canon only.
	auditChain = "gateway/auditchain"
	stores     = []string{"gateway", "gateway/store", approvals, consoleSession, auditChain, "gateway/internal/...", "migrations"}
	// policyStatus is what an operator sees of the policy lifecycle:
	// gateway/policy writes it, the admin API and the console read it
	// without linking OPA.
	policyStatus = "gateway/policy/policystatus"
	anyPkg       = []string{"..."}
	// pipelineUses are the siblings the tools/call pipeline composes: a
	// composing package, but not the wiring, and of the MCP tree only the
	// wire package (the relay it wraps, the elicitation it asks through,
	// the Mcp-Param-* check it calls), never the transport
	// (gateway/mcp): the transport hands it a gateway.CallRequest.
	pipelineUses = []string{"gateway", "gateway/store", "gateway/approvals", "gateway/canon", "gateway/confirm", "gateway/policy", "gateway/ratelimit", "gateway/mcp/wire", "tools", tracing}
	// wireUses: a package that speaks MCP to someone may also import the
	// sanctioned wire package (error mapping, Mcp-Param-* headers).
	wireUses = []string{"gateway", "gateway/canon", "gateway/store", "gateway/mcp/wire", tracing}
	// tracing wraps the OpenTelemetry SDK and the W3C trace context in
	// HTTP headers and params._meta (SEP-414): the pipeline's spans and
	// the adapters' propagation to an upstream read it.
	tracing = "gateway/tracing"
	noSDKs  = []string{"github.com/open-policy-agent/...", "github.com/modelcontextprotocol/...", "github.com/santhosh-tekuri/jsonschema/..."}
	rules   = []rule{
		{pkg: "gateway", why: "domain types: the standard library only, and the one JSON encoder",
			allow: []string{jsonw}, forbid: []string{"*"}},
		{pkg: "gateway/canon", allow: []string{jsonw}, test: []string{"gateway/canon"}, forbid: noSDKs,
			why: "RFC 8785 canonical arguments and their hash: wraps jcs, imports only the one JSON encoder of ours"},
		{pkg: jsonw, forbid: []string{"*"},
			why: "the one JSON encoder (encoding/json's bytes and RFC 8785) of the domain and canon: the standard library only"},
		{pkg: "gateway/store", allow: []string{"gateway", approvals, consoleSession, auditChain}, forbid: []string{"*"},
			why: "the one store contract: domain types, the records their owners share with the stores (approvals, console sessions, the audit chain's report), and the standard library only"},
		{pkg: auditChain, allow: []string{"gateway", "gateway/canon", jsonw}, test: []string{auditChain}, forbid: noSDKs,
			why: "the audit chain's canonical row, hash, verifier and sealing loop: computes only, over the domain, canon and the one JSON encoder, so that the stores, the wiring and an offline verifier share it"},
		{pkg: "gateway/internal/...", allow: []string{"gateway", "gateway/store", approvals, consoleSession, auditChain, "gateway/internal/..."}, why: "the stores' shared SQL core and helpers"},
		{pkg: "gateway/postgres", allow: stores, test: []string{"gateway/postgres/...", "gateway/storetest"}, forbid: noSDKs,
			why: "a store wraps its database and imports no sibling"},
		{pkg: "gateway/postgres/pgtest", allow: []string{"gateway", "gateway/postgres"}, forbid: noSDKs, why: "the PostgreSQL store's test helpers"},
		{pkg: "gateway/sqlite", allow: stores, test: []string{"gateway/sqlite", "gateway/storetest"}, forbid: noSDKs,
			why: "a store wraps its database and imports no sibling"},
		{pkg: "gateway/ratelimit", allow: bottom, test: []string{"gateway/ratelimit", "gateway/mcp/wire"}, forbid: append([]string{"github.com/ulule/..."}, noSDKs...),
			why: "the rate-limit buckets as plain values; takes limits as plain values, not from config or the catalog, and counts in the store (no ulule)"},
		{pkg: "gateway/storetest", allow: []string{"gateway", "gateway/store", approvals, consoleSession, auditChain, "gateway/ratelimit"}, forbid: noSDKs,
			why: "the shared store suite tests the one store contract (gateway/store), so the SQL tests link only the stores"},
		{pkg: "gateway/policy", allow: append(slices.Clip(bottom), policyStatus), test: []string{"gateway/policy", "policies", "tools", "gateway/pipeline", "tools/search"}, why: "wraps OPA"},
		{pkg: "gateway/auth", allow: bottom, test: []string{"gateway/auth"}, why: "wraps golang-jwt"},
		{pkg: "gateway/auditlog", allow: []string{"gateway"}, test: []string{"gateway/auditlog"}, forbid: noSDKs, why: "the audit events besides tool calls: a bounded queue off the request path, the flood bound of refused credentials"},
		{pkg: "gateway/mcp/wire", allow: []string{"gateway"}, test: []string{"gateway/mcp/wire"}, forbid: noSDKs,
			why: "what MCP puts on the wire around the domain (error mapping, Mcp-Param-* headers, relay, elicitation): the domain and the standard library only"},
		{pkg: "gateway/mcp/jsonrpc", allow: []string{"gateway", "gateway/canon", "gateway/mcp/wire"}, test: []string{"gateway/mcp/jsonrpc", "gateway/mcp/internal/jsontest"}, forbid: noSDKs,
			why: "JSON-RPC framing: parses and frames messages, knows no session and no method"},
		{pkg: "gateway/mcp/sessionid", allow: []string{"gateway"}, test: []string{"gateway/mcp/sessionid"}, forbid: noSDKs,
			why: "signed session ids: the domain's principal and the standard library only"},
		{pkg: "gateway/mcp/...", allow: []string{"gateway", "gateway/canon", "gateway/mcp/..."}, test: []string{"gateway/mcp/..."}, why: "wraps the MCP transport"},
		{pkg: "gateway/approvals", allow: append(slices.Clip(bottom), "gateway/mcp/wire"), test: []string{"gateway/approvals", "gateway/sqlite"}, forbid: noSDKs,
			why: "approvals a person decides: declares the store it consumes, imports no sibling (of the MCP tree only the wire package's elicitation)"},
		{pkg: "gateway/confirm", allow: bottom, test: []string{"gateway/confirm"}, why: "confirmation tokens"},
		{pkg: policyStatus, test: []string{policyStatus}, forbid: []string{"*"},
			why: "the policy lifecycle as an operator sees it: the standard library only, so its readers do not link OPA"},
		{pkg: "gateway/admin", allow: append(slices.Clip(wireUses), approvals, policyStatus), test: []string{"gateway/admin", auditChain}, why: "the admin API (its HTTP statuses are the wire's mapping)"},
		{pkg: consoleSession, test: []string{consoleSession}, forbid: []string{"*"},
			why: "a signed-in console visitor as the stores keep it: the standard library only, so the stores do not link the console"},
		{pkg: "gateway/console", allow: []string{"gateway", approvals, policyStatus, consoleSession}, test: []string{"gateway/admin", "gateway/sqlite", auditChain}, forbid: noSDKs,
			why: "the web console: html/template and net/http over the admin API's http.Handler; it reads the domain types, approvals (records and their display), the policy status and its session record, never a store, the admin API or the wiring"},
		{pkg: "gateway/config", allow: bottom, test: []string{"gateway/config"}, why: "configuration"},
		{pkg: "gateway/upstreams", allow: []string{"gateway"}, test: []string{"gateway/upstreams"}, forbid: noSDKs,
			why: "the upstreams file (MCPGATE_UPSTREAMS_FILE): parsed and validated like configuration, the domain and the standard library only"},
		{pkg: "gateway/callercache", allow: bottom, test: []string{"gateway/callercache"}, why: "the caller cache"},
		{pkg: "gateway/decisionlog", allow: bottom, test: []string{"gateway/decisionlog"},
			why: "the decision log (OPA's event format, its file and HTTP sinks): it declares the Masker and Stats it consumes and imports no sibling"},
		{pkg: tracing, test: []string{tracing}, forbid: noSDKs, why: "wraps the OpenTelemetry SDK (OTLP exporter, sampler from OTEL_*) and the trace context in HTTP headers and params._meta; imports none of ours"},
		{pkg: "gateway/metrics", allow: bottom, test: []string{"gateway/metrics"}, forbid: noSDKs, why: "wraps Prometheus: the pipeline's observer"},
		{pkg: "gateway/replica", allow: []string{"gateway", "gateway/store", "gateway/postgres", "gateway/policy", policyStatus}, test: []string{"gateway/replica", "gateway/postgres/..."}, forbid: []string{"github.com/modelcontextprotocol/..."},
			why: "replica coordination: the store's feed (PostgreSQL's LISTEN/NOTIFY, or in-process), what a replica does with an announcement, the session-end cache, relayed answers, policy reloads on every replica; never the transport, the pipeline or the wiring"},
		{pkg: "gateway/pipeline", allow: pipelineUses, test: []string{"gateway/sqlite", "gateway/metrics", "gateway/mcp", "policies"},
			why: "the tools/call steps compose the decision, limits, confirmation, catalog and the wire package's relay and checks, and declare the store, policy, adapter and metrics they consume; never a store, the transport, the admin API, auth, config or the wiring"},
		{pkg: "tools", allow: bottom, test: []string{"tools"}, why: "the tool catalogs"},
		{pkg: "tools/search", allow: []string{"gateway", "tools"}, test: []string{"tools/search", "tools"}, forbid: noSDKs, why: "BM25 over a tool catalog and the cc_server search tools: reads the catalog, declares the backend, callers and policy it consumes, wraps nothing else"},
		{pkg: "adapters/bridge", allow: append(slices.Clip(wireUses), "adapters/mcpupstream"), test: anyPkg,
			why: "the bridge holds one MCP upstream client (adapters/mcpupstream) per bridged upstream and routes calls to them; never the wiring or the request path"},
		{pkg: "adapters/...", allow: append(slices.Clip(wireUses), approvals), test: anyPkg,
			why: "where allowed calls go: the domain, of the transport only its wire package; a backend that keeps human gates implements approvals.HumanGates"},
		{pkg: "policies", why: "the Rego bundles, embedded"},
		{pkg: "migrations", test: []string{"migrations"}, why: "the SQL migrations, embedded"},
		{pkg: "gateway/server/...", allow: anyPkg, test: anyPkg, why: "composes the request path"},
		{pkg: "cmd/...", allow: anyPkg, test: anyPkg, why: "the wiring"},
		{pkg: "test/testbin", why: "finds or builds bin/mcpgate for the tests that start the process; the standard library only"},
		{pkg: "test/...", allow: anyPkg, test: anyPkg, why: "end-to-end tests"},
	}
)

// pkgInfo is what `go list -json` says of a package.
type pkgInfo struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Standard     bool
}

// matches reports whether the module-relative or full path p matches
// pattern ("x/..." for x and below, "..." for all, "*" for anything
// outside the standard library, used only in forbid lists).
func matches(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// ruleFor returns the first rule whose pkg matches the module-relative p.
func ruleFor(p string) (rule, bool) {
	for _, r := range rules {
		if matches(r.pkg, p) {
			return r, true
		}
	}
	return rule{}, false
}

// violations checks every package of pkgs against the rules and returns
// one line per forbidden import.
func violations(pkgs []pkgInfo, std map[string]bool) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		r, ok := ruleFor(rel)
		if !ok {
			out = append(out, rel+": no rule in test/layout says what it may import; add one")
			continue
		}
		check := func(imports, allow []string, kind string) {
			for _, imp := range imports {
				if std[imp] {
					continue
				}
				if own, ok := strings.CutPrefix(imp, module+"/"); ok || imp == module {
					if !ok {
						own = ""
					}
					if !slices.ContainsFunc(allow, func(a string) bool { return matches(a, own) }) {
						out = append(out, rel+" "+kind+"imports "+own+": "+r.why)
					}
					continue
				}
				if slices.ContainsFunc(r.forbid, func(f string) bool { return f == "*" || matches(f, imp) }) {
					out = append(out, rel+" "+kind+"imports "+imp+": "+r.why)
				}
			}
		}
		check(p.Imports, r.allow, "")
		tests := append(slices.Clip(r.allow), append(r.test, rel)...) // an external test imports its package
		check(append(slices.Clip(p.TestImports), p.XTestImports...), tests, "(tests) ")
	}
	return out
}

// goList runs `go list -json` with args and decodes its stream of packages.
func goList(t *testing.T, args ...string) []pkgInfo {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var out []pkgInfo
	dec := json.NewDecoder(&stdout)
	for {
		var p pkgInfo
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
}

// standard is the set of standard-library packages the module's packages
// and their tests import.
func standard(t *testing.T) map[string]bool {
	std := map[string]bool{}
	for _, p := range goList(t, "-deps", "-test", module+"/...") {
		if p.Standard {
			std[p.ImportPath] = true
		}
	}
	return std
}

func TestImportsPointOneWay(t *testing.T) {
	for _, v := range violations(goList(t, module+"/..."), standard(t)) {
		t.Error(v)
	}
}

// The SQL stores' test binaries link neither OPA, the MCP SDK, the JSON
// Schema compiler, the catalog nor any composing package.
func TestStoreTestsLinkOnlyTheStores(t *testing.T) {
	forbidden := append(slices.Clip(noSDKs), module+"/gateway/server/...", module+"/gateway/pipeline", module+"/gateway/metrics", module+"/gateway/policy", module+"/gateway/mcp",
		module+"/gateway/admin", module+"/gateway/config", module+"/tools", module+"/adapters/...", module+"/policies")
	for _, pkg := range []string{"gateway/postgres", "gateway/sqlite", "gateway/ratelimit"} {
		for _, dep := range goList(t, "-deps", "-test", module+"/"+pkg) {
			if slices.ContainsFunc(forbidden, func(f string) bool { return matches(f, dep.ImportPath) }) {
				t.Errorf("the tests of %s link %s", pkg, dep.ImportPath)
			}
		}
	}
}

// The check itself: a sibling import, a config import of ratelimit, and a
// third-party import of the domain package are each reported.
func TestViolationsAreReported(t *testing.T) {
	std := map[string]bool{"context": true}
	for _, tc := range []struct {
		note string
		pkg  pkgInfo
		want string
	}{
		{"store imports a sibling", pkgInfo{ImportPath: module + "/gateway/postgres", Imports: []string{module + "/gateway/ratelimit"}},
			"gateway/postgres imports gateway/ratelimit"},
		{"ratelimit imports config", pkgInfo{ImportPath: module + "/gateway/ratelimit", Imports: []string{module + "/gateway/config"}},
			"gateway/ratelimit imports gateway/config"},
		{"storetest imports the wiring", pkgInfo{ImportPath: module + "/gateway/storetest", Imports: []string{module + "/gateway/server"}},
			"gateway/storetest imports gateway/server"},
		{"domain imports a third party", pkgInfo{ImportPath: module + "/gateway", Imports: []string{"context", "github.com/jmoiron/sqlx"}},
			"gateway imports github.com/jmoiron/sqlx"},
		{"a store's test imports the wiring", pkgInfo{ImportPath: module + "/gateway/sqlite", XTestImports: []string{module + "/gateway/server"}},
			"gateway/sqlite (tests) imports gateway/server"},
		{"a package without a rule", pkgInfo{ImportPath: module + "/gateway/newpkg"}, "gateway/newpkg: no rule"},
		{"the pipeline imports a store", pkgInfo{ImportPath: module + "/gateway/pipeline", Imports: []string{module + "/gateway/postgres"}},
			"gateway/pipeline imports gateway/postgres"},
		{"the pipeline imports the wiring", pkgInfo{ImportPath: module + "/gateway/pipeline", Imports: []string{module + "/gateway/server"}},
			"gateway/pipeline imports gateway/server"},
		{"replica coordination imports the transport", pkgInfo{ImportPath: module + "/gateway/replica", Imports: []string{module + "/gateway/mcp"}},
			"gateway/replica imports gateway/mcp"},
		{"replica coordination imports the wiring", pkgInfo{ImportPath: module + "/gateway/replica", Imports: []string{module + "/gateway/server"}},
			"gateway/replica imports gateway/server"},
		{"the console imports a store", pkgInfo{ImportPath: module + "/gateway/console", Imports: []string{module + "/gateway/sqlite"}},
			"gateway/console imports gateway/sqlite"},
		{"the console imports the wiring", pkgInfo{ImportPath: module + "/gateway/console", Imports: []string{module + "/gateway/server"}},
			"gateway/console imports gateway/server"},
		{"the domain imports approvals", pkgInfo{ImportPath: module + "/gateway", Imports: []string{module + "/gateway/approvals"}},
			"gateway imports gateway/approvals"},
		{"a store imports the console", pkgInfo{ImportPath: module + "/gateway/sqlite", Imports: []string{module + "/gateway/console"}},
			"gateway/sqlite imports gateway/console"},
		{"the pipeline imports the metrics", pkgInfo{ImportPath: module + "/gateway/pipeline", Imports: []string{module + "/gateway/metrics"}},
			"gateway/pipeline imports gateway/metrics"},
		{"the pipeline imports the transport", pkgInfo{ImportPath: module + "/gateway/pipeline", Imports: []string{module + "/gateway/mcp"}},
			"gateway/pipeline imports gateway/mcp"},
		{"the pipeline imports the JSON-RPC framing", pkgInfo{ImportPath: module + "/gateway/pipeline", Imports: []string{module + "/gateway/mcp/jsonrpc"}},
			"gateway/pipeline imports gateway/mcp/jsonrpc"},
		{"approvals import the transport", pkgInfo{ImportPath: module + "/gateway/approvals", Imports: []string{module + "/gateway/mcp"}},
			"gateway/approvals imports gateway/mcp"},
		{"an adapter imports the transport", pkgInfo{ImportPath: module + "/adapters/mcpupstream", Imports: []string{module + "/gateway/mcp"}},
			"adapters/mcpupstream imports gateway/mcp"},
		{"the wire package imports the transport", pkgInfo{ImportPath: module + "/gateway/mcp/wire", Imports: []string{module + "/gateway/mcp"}},
			"gateway/mcp/wire imports gateway/mcp"},
	} {
		t.Run(tc.note, func(t *testing.T) {
			got := violations([]pkgInfo{tc.pkg}, std)
			if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("violations = %q, want one starting %q", got, tc.want)
			}
		})
	}
	if got := violations([]pkgInfo{{ImportPath: module + "/gateway/server", Imports: []string{module + "/gateway/postgres"}}}, std); len(got) != 0 {
		t.Errorf("the composing package may import anything, got %q", got)
	}
	if got := violations([]pkgInfo{{ImportPath: module + "/gateway/pipeline", Imports: []string{module + "/gateway/mcp/wire"}}}, std); len(got) != 0 {
		t.Errorf("the pipeline may import the wire package, got %q", got)
	}
}
