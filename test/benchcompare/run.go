package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/lib/pq"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway/auth"
)

// The gateway's credentials and the workspace the driver seeds.
const (
	jwtSecret  = "bench-compare-secret-0123456789abcdef0123"
	adminToken = "bench-compare-admin-token"
	workspace  = "ws-bench"
	member     = "u1"
	profile    = "bench"
	// protocolVersion is pinned for every session, direct or through the
	// gateway, so that all configurations but the -modern ones speak the
	// same protocol.
	protocolVersion = "2025-11-25"
	// modernVersion is what the clients of a -modern configuration speak:
	// the stateless protocol, no initialize and no session. The Go SDK
	// client sends server/discover first, then every request with the
	// per-request _meta (protocol version, clientInfo, clientCapabilities)
	// and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.
	modernVersion = "2026-07-28"
	// perTaskLimit lifts the per-task bucket (AGENT_MCP_TOOL_RATE_LIMIT,
	// default 50), the only bucket of a read-tier call, far above what a
	// run can reach; each session has its own task as well.
	perTaskLimit = "1000000000"
)

// Configurations, in the order a repetition runs them.
const (
	cfgDirect   = "direct"
	cfgSQLite   = "sqlite"
	cfgPostgres = "postgres"
	// modernSuffix marks a configuration whose clients speak modernVersion
	// instead of protocolVersion: direct-modern, sqlite-modern,
	// postgres-modern.
	modernSuffix = "-modern"
	// baselineSuffix marks a configuration run with options.baselineBin.
	baselineSuffix = " (baseline)"
	// The variants of a gateway configuration (none in defaultConfigs)
	// follow its store and -modern, each at most once and in this order
	// (variantSuffixes): sqlite-bridged, postgres-modern-flow,
	// sqlite-bridged-flow-traced, ….
	//
	// bridgedSuffix: the gateway reaches two upstreams (two benchupstream
	// processes) declared in MCPGATE_UPSTREAMS_FILE instead of one through
	// MCPGATE_UPSTREAM_URL, and each session calls one of their bridged
	// echo tools (bridgedTools), the sessions split between the two; the
	// upstream CPU is both processes'.
	bridgedSuffix = "-bridged"
	// flowSuffix: the shipped flow rule set switched on for the
	// benchmark's workspace through the admin API (PUT
	// /admin/v1/workspaces/{id}/flow-rules), so every call loads its
	// session's history and its reservation records it.
	flowSuffix = "-flow"
	// tracedSuffix: traces on, every call sampled
	// (OTEL_TRACES_SAMPLER=always_on, or BENCH_TRACES_SAMPLER) and its spans exported over
	// OTLP/HTTP to a sink in this process (traceSink), whose CPU is not
	// the gateway's.
	tracedSuffix = "-traced"
	// The floor configurations (not in defaultConfigs) run test/benchfloor
	// instead of the gateway, with session clients only: a net/http
	// forwarder with no store (floor) or with the gateway's two store
	// writes per tools/call on SQLite (floor-sqlite) or PostgreSQL
	// (floor-postgres). See floorStore.
	cfgFloor         = "floor"
	cfgFloorSQLite   = "floor-sqlite"
	cfgFloorPostgres = "floor-postgres"
)

// floorStore is the benchfloor -store of a floor configuration ("none",
// cfgSQLite or cfgPostgres); ok is false for every other configuration.
func floorStore(cfg string) (store string, ok bool) {
	switch cfg {
	case cfgFloor:
		return "none", true
	case cfgFloorSQLite:
		return cfgSQLite, true
	case cfgFloorPostgres:
		return cfgPostgres, true
	}
	return "", false
}

// isFloor reports whether cfg is a floor configuration.
func isFloor(cfg string) bool {
	_, ok := floorStore(cfg)
	return ok
}

// isGateway reports whether cfg runs `mcpgate serve` (a store, with or
// without -modern, with or without the baseline binary).
func isGateway(cfg string) bool {
	store, _, _ := parseConfig(cfg)
	return store == cfgSQLite || store == cfgPostgres
}

// variantSuffixes are the variants' suffixes in the order a configuration
// names them.
var variantSuffixes = []string{bridgedSuffix, flowSuffix, tracedSuffix}

// variants are the variant suffixes a configuration names.
type variants struct{ bridged, flow, traced bool }

// any reports whether v names a variant.
func (v variants) any() bool { return v != variants{} }

// bridgedTools are the tools the sessions of a bridged configuration call,
// session i the one at i modulo their number: benchupstream's echo under
// each upstream's default prefix (its name and a dot).
var bridgedTools = []string{"bench-a.echo", "bench-b.echo"}

// parseConfig splits a configuration name into its store (cfgDirect,
// cfgSQLite or cfgPostgres), whether its clients speak modernVersion, and
// whether it runs options.baselineBin.
func parseConfig(cfg string) (store string, modern, baseline bool) {
	store, baseline = strings.CutSuffix(cfg, baselineSuffix)
	store, _ = cutVariants(store)
	store, modern = strings.CutSuffix(store, modernSuffix)
	return store, modern, baseline
}

// cutVariants is name without its variant suffixes, and the variants it
// named (only in variantSuffixes' order: what is left otherwise stays in
// the name, which is then no store).
func cutVariants(name string) (string, variants) {
	var v variants
	named := []*bool{&v.bridged, &v.flow, &v.traced} // variantSuffixes' order
	for i := len(variantSuffixes) - 1; i >= 0; i-- {
		name, *named[i] = strings.CutSuffix(name, variantSuffixes[i])
	}
	return name, v
}

// variantsOf is the variants cfg names.
func variantsOf(cfg string) variants {
	name, _ := strings.CutSuffix(cfg, baselineSuffix)
	_, v := cutVariants(name)
	return v
}

// toolOf is the tool session i of cfg calls.
func toolOf(cfg string, i int) string {
	if variantsOf(cfg).bridged {
		return bridgedTools[i%len(bridgedTools)]
	}
	return "echo"
}

// upstreamsFile writes, in dir, the MCPGATE_UPSTREAMS_FILE of a bridged
// configuration: one read-tier upstream per URL, named after
// bridgedTools, and returns its path.
func upstreamsFile(dir string, urls []string) (string, error) {
	type upstream struct {
		Name string `json:"name"`
		URL  string `json:"url"`
		Tier string `json:"tier"`
	}
	var f struct {
		Upstreams []upstream `json:"upstreams"`
	}
	for i, u := range urls {
		name, _, _ := strings.Cut(bridgedTools[i], ".")
		f.Upstreams = append(f.Upstreams, upstream{Name: name, URL: u, Tier: "read"})
	}
	b, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "upstreams.json")
	return path, os.WriteFile(path, b, 0o600)
}

// traceSink is an OTLP/HTTP endpoint that takes every export and answers
// 200 with an empty response (a valid empty protobuf message), for the
// traced configurations; stop closes it.
func traceSink() (endpoint string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}

// sessionVersion is the protocol version the clients of cfg speak.
func sessionVersion(cfg string) string {
	if _, modern, _ := parseConfig(cfg); modern {
		return modernVersion
	}
	return protocolVersion
}

// options are the driver's settings (main.go reads them).
type options struct {
	gatewayBin, upstreamBin string
	baselineBin             string // optional: run every gateway configuration with it too
	floorBin                string // test/benchfloor, for the floor configurations
	pgURL                   string // the server's admin URL; each run makes its own database
	duration, warmup        time.Duration
	reps                    int
	concurrency             []int
	configs                 []string
	tmp                     string
	profileDir              string   // BENCH_PROFILE: write a CPU profile of each gateway run here
	rate                    float64  // BENCH_RATE: calls/s over all sessions; 0 for the closed loop
	pairs                   bool     // BENCH_PAIRS: run the session/2026-07-28 pairs again at one rate
	sampler                 []string // the traced configurations' OTEL_TRACES_SAMPLER (and _ARG) settings
}

// result is one run: one configuration at one concurrency.
type result struct {
	config     string
	c          int
	calls      int
	window     time.Duration
	p50, p99   time.Duration
	gatewayCPU time.Duration // the gateway's, or the floor's; -1 when there is neither
	upCPU      time.Duration
	clientCPU  time.Duration // this process: the load clients (and the benchmark's own sampling)
	pg         *backendUsage // nil when there is no PostgreSQL
}

func (r result) rate() float64 { return float64(r.calls) / r.window.Seconds() }

// perCall is cpu per measured call, in µs.
func (r result) perCall(cpu time.Duration) float64 {
	return float64(cpu.Microseconds()) / float64(r.calls)
}

// run starts fresh processes for one configuration, warms up, measures and
// tears everything down.
func run(ctx context.Context, o options, cfg string, c int) (res result, err error) {
	res = result{config: cfg, c: c, gatewayCPU: -1}
	var cleanups []func()
	defer func() {
		for _, f := range slices.Backward(cleanups) {
			f()
		}
	}()

	store, modern, isBaseline := parseConfig(cfg)
	// The Go SDK serves 2026-07-28 only in its stateless mode: direct-modern
	// runs the upstream so. Every gateway row has the same stateful upstream,
	// so that only what the clients speak to the gateway differs between a
	// row and its -modern row.
	up, err := startUpstream(o.upstreamBin, store == cfgDirect && modern)
	if err != nil {
		return res, err
	}
	cleanups = append(cleanups, up.stop)
	endpoint := up.url
	v := variantsOf(cfg)
	ups := []*proc{up} // every upstream of the run, whose CPU is the upstream's
	if v.bridged {
		for range bridgedTools[1:] {
			more, err := startUpstream(o.upstreamBin, false)
			if err != nil {
				return res, err
			}
			cleanups = append(cleanups, more.stop)
			ups = append(ups, more)
		}
	}

	var gw *proc
	var meter *backendMeter
	var profileURL string // the gateway's CPU profile endpoint when BENCH_PROFILE is set
	// kind is the store of the gateway or the floor: cfgSQLite,
	// cfgPostgres, or "" (none: direct, or the floor without a store).
	kind := ""
	if isGateway(cfg) {
		kind = store
	} else if fs, ok := floorStore(cfg); ok && fs != "none" {
		kind = fs
	}
	var sqlitePath string
	var pg *database
	switch kind {
	case cfgSQLite:
		dir, err := os.MkdirTemp(o.tmp, "sqlite-")
		if err != nil {
			return res, err
		}
		cleanups = append(cleanups, func() { _ = os.RemoveAll(dir) })
		sqlitePath = filepath.Join(dir, "mcpgate.db")
	case cfgPostgres:
		if pg, err = newDatabase(ctx, o.pgURL); err != nil {
			return res, err
		}
		cleanups = append(cleanups, pg.drop)
		if pg.postmaster > 0 {
			meter = newBackendMeter(pg.postmaster, pg.name)
		}
	}
	if fs, ok := floorStore(cfg); ok {
		args := []string{"-listen", "127.0.0.1:0", "-upstream", up.url, "-store", fs}
		switch kind {
		case cfgSQLite:
			args = append(args, "-sqlite-path", sqlitePath)
		case cfgPostgres:
			args = append(args, "-dsn", pg.url)
		}
		if gw, err = startFloor(o.floorBin, args); err != nil {
			return res, err
		}
		cleanups = append(cleanups, gw.stop)
		endpoint = gw.url
	} else if isGateway(cfg) {
		dbURL := "sqlite:" + sqlitePath
		if pg != nil {
			dbURL = pg.url
		}
		bin := o.gatewayBin
		if isBaseline {
			bin = o.baselineBin
		}
		var extra []string
		if o.profileDir != "" && !isBaseline {
			if profileURL, err = freeAddr(); err != nil {
				return res, err
			}
			extra = []string{"MCPGATE_METRICS_LISTEN=" + profileURL, "MCPGATE_PPROF=true"}
			profileURL = "http://" + profileURL + "/debug/pprof/profile"
		}
		if v.bridged {
			dir, err := os.MkdirTemp(o.tmp, "upstreams-")
			if err != nil {
				return res, err
			}
			cleanups = append(cleanups, func() { _ = os.RemoveAll(dir) })
			urls := make([]string, len(ups))
			for i, u := range ups {
				urls[i] = u.url
			}
			file, err := upstreamsFile(dir, urls)
			if err != nil {
				return res, err
			}
			extra = append(extra, "MCPGATE_UPSTREAMS_FILE="+file)
		} else {
			// echo is not in the SupaCloud catalog; as a read-tier tool it
			// has only the per-task bucket.
			extra = append(extra, "MCPGATE_UPSTREAM_URL="+up.url, "MCPGATE_UPSTREAM_TIER=read")
		}
		if v.traced {
			sink, stop, err := traceSink()
			if err != nil {
				return res, err
			}
			cleanups = append(cleanups, stop)
			extra = append(append(extra, "OTEL_EXPORTER_OTLP_ENDPOINT="+sink), o.sampler...)
		}
		if gw, err = startGateway(bin, dbURL, extra...); err != nil {
			return res, err
		}
		cleanups = append(cleanups, gw.stop)
		if err := seed(ctx, gw.url, c, v.flow); err != nil {
			return res, fmt.Errorf("seeding the gateway: %w\n%s", err, gw.logs())
		}
		endpoint = gw.url + "/mcp"
	}

	hc := &http.Transport{MaxIdleConnsPerHost: c + 4, IdleConnTimeout: time.Minute}
	cleanups = append(cleanups, hc.CloseIdleConnections)
	sessions, err := connect(ctx, endpoint, hc, c, isGateway(cfg), sessionVersion(cfg))
	// Registered before the error check: connect returns the sessions it
	// opened even when a later one failed.
	cleanups = append(cleanups, func() {
		for _, s := range sessions {
			_ = s.Close()
		}
	})
	if err != nil {
		return res, err
	}

	// Closed loop: every session calls echo again as soon as its last call
	// returns (or, with BENCH_RATE, at its next scheduled time), from the
	// start of the warm-up to the end of the window.
	// Only calls that start and end inside the window are counted.
	base := time.Now()
	var winStart, winEnd atomic.Int64 // ns since base; 0 = not yet
	winStart.Store(1 << 62)
	winEnd.Store(1 << 62)
	lctx, stopLoad := context.WithCancel(ctx)
	lat := make([][]time.Duration, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	for i, s := range sessions {
		lat[i] = make([]time.Duration, 0, 1<<16)
		wg.Go(func() {
			params := &mcp.CallToolParams{Name: toolOf(cfg, i), Arguments: map[string]any{"text": fmt.Sprintf("hello from session %d", i)}}
			pace := newPacer(o.rate, c, i)
			for lctx.Err() == nil {
				if !pace.wait(lctx) {
					return
				}
				t0 := time.Since(base)
				r, err := s.CallTool(lctx, params)
				t1 := time.Since(base)
				if err == nil && r.IsError {
					err = fmt.Errorf("echo returned a tool error: %+v", r.Content)
				}
				if err != nil {
					if lctx.Err() == nil || int64(t1) < winEnd.Load() {
						errs[i] = fmt.Errorf("session %d: %w", i, err)
					}
					return
				}
				if int64(t0) >= winStart.Load() && int64(t1) <= winEnd.Load() {
					lat[i] = append(lat[i], t1-t0)
				}
			}
		})
	}
	failed := func() error {
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		return nil
	}
	wait := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	werr := wait(o.warmup)
	// Window start: CPU readings right after the mark; window end: right
	// before it. The CPU window is therefore the calls' window, plus the
	// calls in flight at its edges (at most c of them, not counted).
	winStart.Store(int64(time.Since(base)))
	gw0, up0, cl0 := cpuOf(gw), cpuOf(ups...), selfCPU()
	if meter != nil {
		meter.Start()
	}
	var profiled chan error
	if profileURL != "" {
		profiled = make(chan error, 1)
		go func() { profiled <- saveProfile(ctx, profileURL, o.duration, o.profilePath(cfg, c)) }()
	}
	if werr == nil {
		werr = wait(o.duration)
	}
	if profiled != nil {
		if err := <-profiled; err != nil && werr == nil {
			werr = fmt.Errorf("CPU profile: %w", err)
		}
	}
	var pgUse backendUsage
	if meter != nil {
		pgUse = meter.Stop()
	}
	gw1, up1, cl1 := cpuOf(gw), cpuOf(ups...), selfCPU()
	winEnd.Store(int64(time.Since(base)))
	res.window = time.Duration(winEnd.Load() - winStart.Load())
	stopLoad()
	wg.Wait()
	if werr != nil {
		return res, werr
	}
	if err := failed(); err != nil {
		if gw != nil {
			return res, fmt.Errorf("%w\ngateway log (end):\n%s", err, gw.logs())
		}
		return res, err
	}

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return res, errors.New("no call completed inside the window")
	}
	slices.Sort(all)
	res.calls = len(all)
	res.p50, res.p99 = percentile(all, 0.50), percentile(all, 0.99)
	res.upCPU, res.clientCPU = up1-up0, cl1-cl0
	if gw != nil {
		res.gatewayCPU = gw1 - gw0
	}
	if meter != nil {
		res.pg = &pgUse
	}
	return res, nil
}

// cpuOf is the CPU time so far of the processes ps, summed (nil ones
// count 0).
func cpuOf(ps ...*proc) time.Duration {
	var sum time.Duration
	for _, p := range ps {
		if p != nil {
			d, _ := processCPU(p.cmd.Process.Pid)
			sum += d
		}
	}
	return sum
}

// pacer spaces one session's calls so that c sessions together make rate
// calls/s; a zero pacer (rate 0) never waits. A session that falls behind
// its schedule calls at once and its schedule restarts from now, so a slow
// stretch is not followed by a burst.
type pacer struct {
	every time.Duration // 0: closed loop
	next  time.Time
}

// newPacer is session i's pacer of c; sessions start spread over one
// interval so that their calls do not arrive together.
func newPacer(rate float64, c, i int) *pacer {
	if rate <= 0 {
		return &pacer{}
	}
	every := time.Duration(float64(time.Second) * float64(c) / rate)
	return &pacer{every: every, next: time.Now().Add(every * time.Duration(i) / time.Duration(c))}
}

// wait blocks until the session's next call is due; false when ctx ends
// first.
func (p *pacer) wait(ctx context.Context) bool {
	if p.every == 0 {
		return true
	}
	now := time.Now()
	if d := p.next.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
		p.next = p.next.Add(p.every)
		return true
	}
	p.next = now.Add(p.every)
	return true
}

// selfCPU is the CPU time of this process so far: the load clients run
// in it, so it shows what a protocol's client costs the shared cores.
func selfCPU() time.Duration {
	d, _ := processCPU(os.Getpid())
	return d
}

// ---- processes ----

// proc is a child process; it is stopped by its own pid only.
type proc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	mu   sync.Mutex
	tail []string // the last lines of its output
}

// start runs bin with args and env and returns once ready reports the
// URL it found in an output line (read from the stream out names).
func start(bin string, args, env []string, stream string, ready func(line string) (string, bool)) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	// The child gets SIGTERM if the driver dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	var r io.Reader
	var err error
	if stream == "stdout" {
		r, err = cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
	} else {
		r, err = cmd.StderrPipe()
	}
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		// Keep reading to the end: a child blocked on a full pipe would
		// stall the benchmark.
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			if p.tail = append(p.tail, line); len(p.tail) > 40 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
			if u, ok := ready(line); ok {
				select {
				case found <- u:
				default:
				}
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(p.done) }()
	select {
	case p.url = <-found:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited at start:\n%s", bin, p.logs())
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not start listening within 60 s:\n%s", bin, p.logs())
	}
}

func (p *proc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// stop sends SIGTERM (graceful shutdown) and kills the process after 15 s.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// startUpstream runs test/benchupstream on a free loopback port, in the
// SDK's stateless mode when stateless is set.
func startUpstream(bin string, stateless bool) (*proc, error) {
	args := []string{"-addr", "127.0.0.1:0"}
	if stateless {
		args = append(args, "-stateless")
	}
	return start(bin, args, nil, "stdout", func(line string) (string, bool) {
		return strings.CutPrefix(line, "benchupstream listening on ")
	})
}

// startFloor runs test/benchfloor with args (its -listen is a free
// loopback port).
func startFloor(bin string, args []string) (*proc, error) {
	return start(bin, args, nil, "stdout", func(line string) (string, bool) {
		return strings.CutPrefix(line, "benchfloor listening on ")
	})
}

// startGateway runs `mcpgate serve` (production mode, not --dev) on a free
// loopback port, on the store dbURL names; extraEnv names its upstreams
// (MCPGATE_UPSTREAM_URL or MCPGATE_UPSTREAMS_FILE) and any other setting.
func startGateway(bin, dbURL string, extraEnv ...string) (*proc, error) {
	env := []string{
		"MCPGATE_LISTEN=127.0.0.1:0",
		"MCPGATE_DATABASE_URL=" + dbURL,
		"MCPGATE_JWT_SECRET=" + jwtSecret,
		"MCPGATE_ADMIN_TOKEN=" + adminToken,
		"MCPGATE_LOG_FORMAT=json",
		"AGENT_MCP_TOOL_RATE_LIMIT=" + perTaskLimit,
	}
	env = append(env, extraEnv...)
	return start(bin, []string{"serve"}, env, "stderr", func(line string) (string, bool) {
		var entry struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "mcpgate listening" {
			return "http://" + entry.Addr, true
		}
		return "", false
	})
}

// ---- PostgreSQL ----

// database is a fresh database of one run on the benchmark's server.
type database struct {
	admin      *sql.DB
	name, url  string
	postmaster int // 0 when the server's processes are not visible here
}

// newDatabase creates a database of its own for one run, so that the run
// starts on empty tables and its backends can be told apart from every
// other client of the server by their process titles (backendMeter).
func newDatabase(ctx context.Context, adminURL string) (*database, error) {
	admin, err := sql.Open("postgres", adminURL)
	if err != nil {
		return nil, err
	}
	admin.SetMaxOpenConns(1)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	d := &database{admin: admin, name: "bench_compare_" + hex.EncodeToString(b)}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+d.name); err != nil {
		_ = admin.Close()
		return nil, fmt.Errorf("create database (is PostgreSQL running, and may the role of %s create databases?): %w", redact(adminURL), err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		d.drop()
		return nil, err
	}
	u.Path = "/" + d.name
	d.url = u.String()
	// The postmaster is the parent of this connection's backend, if the
	// server runs on this machine.
	var backend int
	if err := admin.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&backend); err == nil {
		if s, err := readStat(backend); err == nil {
			d.postmaster = s.PPID
		}
	}
	return d, nil
}

func (d *database) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+d.name+" WITH (FORCE)"); err != nil {
		fmt.Fprintf(os.Stderr, "bench-compare: drop database %s: %v\n", d.name, err)
	}
	_ = d.admin.Close()
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "the database URL"
}

// ---- the gateway's workspace, and the MCP sessions ----

// seed creates, through the admin API, the workspace, its member, a
// profile granting the read tier (echo, and the bridged echo tools, are
// read-tier tools) and one running task per session; with flow, it then
// switches the flow rule set on for the workspace.
func seed(ctx context.Context, base string, c int, flow bool) error {
	ws := "/workspaces/" + workspace
	reqs := []struct {
		path string
		body any
	}{
		{ws, map[string]any{"name": "bench-compare", "slug": "bench", "org_plan": "team"}},
		{ws + "/members/" + member, map[string]any{"role": "member", "seat_type": "developer"}},
		{ws + "/profiles/" + profile, map[string]any{"name": profile, "allowlist": []string{"supacloud.read.*"}}},
	}
	for i := range c {
		reqs = append(reqs, struct {
			path string
			body any
		}{fmt.Sprintf("%s/tasks/task-%d", ws, i), map[string]any{"status": "running"}})
	}
	if flow {
		reqs = append(reqs, struct {
			path string
			body any
		}{ws + "/flow-rules", map[string]any{"enabled": true}})
	}
	for _, r := range reqs {
		body, _ := json.Marshal(r.body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/admin/v1"+r.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		out, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("PUT %s: HTTP %d %s", r.path, resp.StatusCode, out)
		}
	}
	return nil
}

// bearer adds an agent session token to every request of one session.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens c MCP client sessions with the Go SDK client at protocol
// version, all over one HTTP transport; through the gateway each has the
// token of its own task. At modernVersion a "session" is the SDK's client
// state only: it discovers the server and then sends every call on its
// own, with no Mcp-Session-Id. A client that negotiated any other version
// than the one asked for (the SDK falls back to initialize when discovery
// fails) is an error, so a -modern row never measures the session path.
func connect(ctx context.Context, endpoint string, hc http.RoundTripper, c int, gateway bool, version string) ([]*mcp.ClientSession, error) {
	var issuer *auth.JWT
	if gateway {
		var err error
		if issuer, err = auth.NewJWT(auth.JWTConfig{Secret: []byte(jwtSecret), Audience: "mcpgate"}); err != nil {
			return nil, err
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-compare", Version: "1"}, nil)
	var sessions []*mcp.ClientSession
	for i := range c {
		rt := hc
		if gateway {
			tok, err := issuer.Issue(auth.AgentClaims{Subject: member, WorkspaceID: workspace,
				TaskID: fmt.Sprintf("task-%d", i), ProfileID: profile}, 2*time.Hour)
			if err != nil {
				return sessions, err
			}
			rt = bearer{token: tok, next: hc}
		}
		tr := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt},
			// No standing GET stream: the benchmark only makes calls.
			DisableStandaloneSSE: true}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s, err := client.Connect(cctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		cancel()
		if err != nil {
			return sessions, fmt.Errorf("session %d: connect %s: %w", i, endpoint, err)
		}
		sessions = append(sessions, s)
		if got := s.InitializeResult().ProtocolVersion; got != version {
			return sessions, fmt.Errorf("session %d: %s negotiated protocol %s, not %s", i, endpoint, got, version)
		}
	}
	return sessions, nil
}

// freeAddr returns a loopback host:port nothing listens on right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// saveProfile fetches a CPU profile of d (whole seconds, at least 1) from
// the gateway's /debug/pprof/profile and writes it to path.
func saveProfile(ctx context.Context, url string, d time.Duration, path string) error {
	secs := max(int(d/time.Second), 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s?seconds=%d", url, secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// profilePath names the CPU profile of one run: config, concurrency and a
// repetition counter, in BENCH_PROFILE.
func (o options) profilePath(cfg string, c int) string {
	name := strings.NewReplacer(" ", "", "(", "", ")", "").Replace(cfg)
	for i := 1; ; i++ {
		p := filepath.Join(o.profileDir, fmt.Sprintf("%s-c%d-%d.pprof", name, c, i))
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return p
		}
	}
}
