package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/upstreams"
)

func TestParseStat(t *testing.T) {
	// comm may hold spaces and parentheses; fields count from its last ')'.
	line := "4242 (postgres: a) b) S 1622 4242 4242 0 -1 4194560 90 0 0 0 123 45 6 7 20 0 1 0 100 1000 10\n"
	s, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := (procStat{PPID: 1622, CPU: 168, Children: 13}); s != want {
		t.Errorf("parseStat = %+v; want %+v", s, want)
	}
	if _, err := parseStat([]byte("4242 (x) S 1")); err == nil {
		t.Error("parseStat of a short line: no error")
	}
}

func TestClockTicks(t *testing.T) {
	if n := clockTicks(); n < 1 || n > 10000 {
		t.Fatalf("clockTicks() = %d", n)
	}
	if got := ticks(clockTicks()); got != time.Second {
		t.Errorf("ticks(one second's worth) = %s", got)
	}
}

// TestProcessCPUSelf spins in this process until procfs shows 50 ms more
// CPU time, and checks that the reading stays within what the wall clock
// allows.
func TestProcessCPUSelf(t *testing.T) {
	pid := os.Getpid()
	before, err := processCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var used time.Duration
	x := 0
	for used < 50*time.Millisecond {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("spun for 5 s, procfs shows %s of CPU", used)
		}
		for i := range 100000 {
			x ^= i * i
		}
		after, err := processCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		used = after - before
	}
	_ = x
	if wall := time.Since(start); used > wall*time.Duration(runtime.NumCPU())+2*ticks(1) {
		t.Errorf("procfs shows %s of CPU for %s of spinning on %d CPUs", used, wall, runtime.NumCPU())
	}
}

func TestPercentileMedian(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("percentile(1..100 ms, %v) = %s; want %s", c.p, got, c.want)
		}
	}
	if got := percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("percentile of one value = %s", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of none = %s", got)
	}

	in := []float64{3, 1, 2}
	if got := median(in); got != 2 {
		t.Errorf("median(3,1,2) = %v", got)
	}
	if !slices.Equal(in, []float64{3, 1, 2}) {
		t.Errorf("median sorted its argument: %v", in)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median(4,1,3,2) = %v", got)
	}
	if got := median([]time.Duration{5 * time.Millisecond}); got != 5*time.Millisecond {
		t.Errorf("median of one = %s", got)
	}
}

func TestTitleNamesDatabase(t *testing.T) {
	title := []byte("postgres: 15/main: mcpgate bench_compare_0a1b 127.0.0.1(36812) idle\x00\x00\x00")
	if !titleNamesDatabase(title, "bench_compare_0a1b") {
		t.Error("title of a backend of the database: not matched")
	}
	for _, db := range []string{"bench_compare_0a", "mcpgate_test"} {
		if titleNamesDatabase(title, db) {
			t.Errorf("title matched database %s", db)
		}
	}
}

// TestBackendMeter meters a child of this process whose command line names
// a "database", as a backend's title does: it starts inside the window,
// uses some CPU and exits before the window ends.
func TestBackendMeter(t *testing.T) {
	const db = "bench_compare_meter_test"
	m := newBackendMeter(os.Getpid(), db)
	m.Start()
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 0.2", db)
	if err := cmd.Start(); err != nil {
		t.Skipf("no sh: %v", err)
	}
	if !slices.Contains(children(os.Getpid()), cmd.Process.Pid) {
		t.Errorf("children(self) does not list the child %d", cmd.Process.Pid)
	}
	_ = cmd.Wait()
	u := m.Stop()
	if u.Backends != 1 || u.Started != 1 || u.Exited != 1 {
		t.Errorf("meter saw %+v; want the one child, started and exited inside the window", u)
	}
	if u.CPU <= 0 {
		t.Errorf("meter counted no CPU for a child that spun: %+v", u)
	}
	// The "server" here is this test process and its children: the reaped
	// child's time is in its cutime, and the test's own time is added.
	if u.Server < u.CPU {
		t.Errorf("server-wide CPU %s < the child's %s", u.Server, u.CPU)
	}
}

// TestConfigs checks how configuration names map to a store, a protocol and
// the direct row they are compared with.
func TestConfigs(t *testing.T) {
	for _, c := range []struct {
		cfg, store, version string
		modern, baseline    bool
	}{
		{"direct", cfgDirect, protocolVersion, false, false},
		{"sqlite-modern", cfgSQLite, modernVersion, true, false},
		{"postgres-modern (baseline)", cfgPostgres, modernVersion, true, true},
		{"postgres (baseline)", cfgPostgres, protocolVersion, false, true},
	} {
		store, modern, baseline := parseConfig(c.cfg)
		if store != c.store || modern != c.modern || baseline != c.baseline || sessionVersion(c.cfg) != c.version {
			t.Errorf("parseConfig(%q) = %q, %v, %v (version %s); want %q, %v, %v (%s)",
				c.cfg, store, modern, baseline, sessionVersion(c.cfg), c.store, c.modern, c.baseline, c.version)
		}
	}
	for _, c := range []struct {
		cfg, store     string
		floor, gateway bool
	}{
		{"floor", "none", true, false},
		{"floor-sqlite", cfgSQLite, true, false},
		{"floor-postgres", cfgPostgres, true, false},
		{"floor-modern", "", false, false},
		{"sqlite", "", false, true},
		{"postgres-modern (baseline)", "", false, true},
		{"direct", "", false, false},
	} {
		store, ok := floorStore(c.cfg)
		if store != c.store || ok != c.floor || isFloor(c.cfg) != c.floor || isGateway(c.cfg) != c.gateway {
			t.Errorf("%q: floorStore %q, %v, isGateway %v; want %q, %v, %v", c.cfg, store, ok, isGateway(c.cfg), c.store, c.floor, c.gateway)
		}
	}
	if v := sessionVersion("floor-postgres"); v != protocolVersion {
		t.Errorf("floor-postgres clients speak %s; want %s", v, protocolVersion)
	}
	for _, c := range []struct {
		configs   []string
		cfg, want string
		ok        bool
	}{
		{[]string{"direct", "floor-sqlite"}, "floor-sqlite", "direct", true},
		{[]string{"floor"}, "floor", "", false},
		{[]string{"direct", "sqlite-modern"}, "sqlite-modern", "direct", true},
		{[]string{"direct", "direct-modern", "sqlite-modern"}, "sqlite-modern", "direct", true},
		{[]string{"direct-modern", "sqlite-modern"}, "sqlite-modern", "", false},
		{[]string{"direct", "direct-modern", "sqlite"}, "sqlite", "direct", true},
		{[]string{"sqlite-modern"}, "sqlite-modern", "", false},
		{[]string{"direct", "direct-modern"}, "direct-modern", "", false},
	} {
		if got, ok := directOf(c.configs, c.cfg); got != c.want || ok != c.ok {
			t.Errorf("directOf(%v, %q) = %q, %v; want %q, %v", c.configs, c.cfg, got, ok, c.want, c.ok)
		}
	}
}

// TestVariants: a configuration's variants follow its store and -modern
// in variantSuffixes' order; a bridged configuration's sessions call the
// bridged echo tools in turn, the others echo.
func TestVariants(t *testing.T) {
	for _, c := range []struct {
		cfg   string
		store string
		want  variants
	}{
		{"sqlite", cfgSQLite, variants{}},
		{"sqlite-bridged", cfgSQLite, variants{bridged: true}},
		{"postgres-modern-flow", cfgPostgres, variants{flow: true}},
		{"postgres-modern-bridged-flow-traced (baseline)", cfgPostgres, variants{true, true, true}},
		{"sqlite-traced", cfgSQLite, variants{traced: true}},
	} {
		store, _, _ := parseConfig(c.cfg)
		if got := variantsOf(c.cfg); got != c.want || store != c.store || !isGateway(c.cfg) {
			t.Errorf("%q: variants %+v, store %q, gateway %v; want %+v, %q, a gateway", c.cfg, got, store, isGateway(c.cfg), c.want, c.store)
		}
	}
	var tools []string
	for i := range 4 {
		tools = append(tools, toolOf("sqlite-bridged", i))
	}
	if want := []string{"bench-a.echo", "bench-b.echo", "bench-a.echo", "bench-b.echo"}; !slices.Equal(tools, want) || toolOf("sqlite-flow", 1) != "echo" {
		t.Errorf("tools of sqlite-bridged's sessions %v, of sqlite-flow's %q; want %v and echo", tools, toolOf("sqlite-flow", 1), want)
	}
}

// TestUpstreamsFile: the bridged configuration's file is one the gateway
// takes (gateway/upstreams parses it), two read-tier upstreams whose
// default prefixes make the names bridgedTools calls.
func TestUpstreamsFile(t *testing.T) {
	urls := []string{"http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp"}
	path, err := upstreamsFile(t.TempDir(), urls)
	if err != nil {
		t.Fatal(err)
	}
	f, err := upstreams.Load(path, upstreams.Options{})
	if err != nil {
		t.Fatalf("the gateway refuses the bridged configuration's upstreams file: %v", err)
	}
	if len(f.Upstreams) != len(bridgedTools) {
		t.Fatalf("%d upstreams; want %d", len(f.Upstreams), len(bridgedTools))
	}
	for i, u := range f.Upstreams {
		if u.Prefix+"echo" != bridgedTools[i] || u.URL.Value() != urls[i] || u.Tier != gateway.TierRead || u.Surface != gateway.SurfaceSupaCloud {
			t.Errorf("upstream %d: %s, prefix %q, url %s, tier %q, surface %q; want %s from %s, read, supacloud", i, u.Name, u.Prefix, u.URL.Value(), u.Tier, u.Surface, bridgedTools[i], urls[i])
		}
	}
}

// TestLoadConfigs checks BENCH_CONFIGS: the default runs session and
// 2026-07-28 rows of both stores; unknown and repeated names are refused.
func TestLoadConfigs(t *testing.T) {
	bin := os.Args[0] // any file that exists stands in for the binaries
	for _, c := range []struct {
		env     string
		want    []string
		wantErr bool
	}{
		{"", []string{"direct", "sqlite", "sqlite-modern", "postgres", "postgres-modern"}, false},
		{"direct-modern, postgres-modern", []string{"direct-modern", "postgres-modern"}, false},
		{"sqlite-new", nil, true},
		{"sqlite (baseline)", nil, true},
		{"sqlite,sqlite", nil, true},
		{"direct,floor,floor-sqlite,floor-postgres,sqlite,postgres", []string{"direct", "floor", "floor-sqlite", "floor-postgres", "sqlite", "postgres"}, false},
		{"sqlite-traced,postgres-modern-traced", []string{"sqlite-traced", "postgres-modern-traced"}, false},
		{"direct-traced", nil, true}, // only the gateway traces
		{"floor-traced", nil, true},
		{"sqlite-traced-modern", nil, true},
		{"sqlite-bridged,postgres-modern-flow,sqlite-bridged-flow-traced", []string{"sqlite-bridged", "postgres-modern-flow", "sqlite-bridged-flow-traced"}, false},
		{"direct-bridged", nil, true}, // the variants are the gateway's
		{"floor-flow", nil, true},
		{"sqlite-flow-bridged", nil, true}, // variants in variantSuffixes' order only
		{"sqlite-traced-flow", nil, true},
		{"sqlite-bridged-bridged", nil, true},
		{"sqlite-bridged-modern", nil, true},
		{"floor-modern", nil, true},        // the floor runs session clients only
		{"floor-sqlite-modern", nil, true}, //
		{"floor (baseline)", nil, true},
		{"floor-mysql", nil, true},
		{"floor,floor", nil, true},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv("BENCH_CONFIGS", c.env)
			o, err := loadArgs([]string{"-gateway", bin, "-upstream", bin, "-floor", bin})
			if (err != nil) != c.wantErr || !c.wantErr && !slices.Equal(o.configs, c.want) {
				t.Errorf("BENCH_CONFIGS=%q: configs %v, error %v; want %v (error: %v)", c.env, o.configs, err, c.want, c.wantErr)
			}
		})
	}
}

// TestLoadBinaries: each binary must exist only when a configuration runs
// it, and -baseline adds a baseline row to the gateway configurations
// only, never to direct or the floor.
func TestLoadBinaries(t *testing.T) {
	bin, missing := os.Args[0], filepath.Join(t.TempDir(), "absent")
	for _, c := range []struct {
		configs                string
		gateway, floor, wantOK bool
	}{
		{"direct,sqlite", true, false, true},
		{"direct,floor", false, true, true},
		{"direct,floor-postgres", false, false, false}, // no benchfloor
		{"direct,postgres-modern", false, true, false}, // no mcpgate
		{"floor,floor-sqlite", false, true, true},
	} {
		t.Setenv("BENCH_CONFIGS", c.configs)
		gw, fl := missing, missing
		if c.gateway {
			gw = bin
		}
		if c.floor {
			fl = bin
		}
		_, err := loadArgs([]string{"-gateway", gw, "-upstream", bin, "-floor", fl})
		if (err == nil) != c.wantOK {
			t.Errorf("BENCH_CONFIGS=%s, mcpgate present %v, benchfloor present %v: error %v; want ok %v", c.configs, c.gateway, c.floor, err, c.wantOK)
		}
	}
	t.Setenv("BENCH_CONFIGS", "direct,floor,sqlite,floor-postgres")
	o, err := loadArgs([]string{"-gateway", bin, "-upstream", bin, "-floor", bin, "-baseline", bin})
	if want := []string{"direct", "floor", "sqlite", "sqlite (baseline)", "floor-postgres"}; err != nil || !slices.Equal(o.configs, want) {
		t.Errorf("with -baseline: configs %v, error %v; want %v", o.configs, err, want)
	}
}

func TestLoadRate(t *testing.T) {
	bin := os.Args[0]
	for _, c := range []struct {
		env     string
		want    float64
		wantErr bool
	}{
		{"", 0, false},
		{"1500", 1500, false},
		{"0", 0, false},
		{"-1", 0, true},
		{"fast", 0, true},
		{"NaN", 0, true},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv("BENCH_RATE", c.env)
			o, err := loadArgs([]string{"-gateway", bin, "-upstream", bin})
			if (err != nil) != c.wantErr || !c.wantErr && o.rate != c.want {
				t.Errorf("BENCH_RATE=%q: rate %v, error %v; want %v (error: %v)", c.env, o.rate, err, c.want, c.wantErr)
			}
		})
	}
}

// The pacer gives each of c sessions an interval of c/rate, starts them
// spread over one interval, and restarts a session's schedule from now
// when it has fallen behind (no burst to catch up).
func TestPacer(t *testing.T) {
	if p := newPacer(0, 16, 3); p.every != 0 || !p.wait(context.Background()) {
		t.Fatalf("rate 0: %+v; want a closed loop that never waits", p)
	}
	before := time.Now()
	p := newPacer(1000, 4, 2) // 4 sessions at 1000 calls/s: each every 4 ms, session 2 at +2 ms
	after := time.Now()
	if p.every != 4*time.Millisecond {
		t.Fatalf("interval %v; want 4ms", p.every)
	}
	if p.next.Before(before.Add(2*time.Millisecond)) || p.next.After(after.Add(2*time.Millisecond)) {
		t.Errorf("session 2 starts %v after creation; want 2ms", p.next.Sub(before))
	}
	p.next = time.Now().Add(-time.Second) // far behind
	start := time.Now()
	if !p.wait(context.Background()) {
		t.Fatal("wait returned false without a cancelled context")
	}
	if p.next.Before(start.Add(p.every)) {
		t.Errorf("a pacer behind schedule keeps its old schedule (next %v, want ≥ now + %v): it would burst", p.next.Sub(start), p.every)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.next = time.Now().Add(time.Hour)
	if p.wait(ctx) {
		t.Error("wait on a cancelled context returned true")
	}
}

// Repetitions alternate the order of the configurations, so no
// configuration always runs right after the same other one.
func TestRunOrderAlternates(t *testing.T) {
	configs := []string{"direct", "postgres", "postgres-modern"}
	for rep, want := range [][]string{
		{"direct", "postgres", "postgres-modern"},
		{"postgres-modern", "postgres", "direct"},
		{"direct", "postgres", "postgres-modern"},
	} {
		if got := runOrder(configs, rep); !slices.Equal(got, want) {
			t.Errorf("rep %d: %v; want %v", rep, got, want)
		}
	}
	if !slices.Equal(configs, []string{"direct", "postgres", "postgres-modern"}) {
		t.Errorf("runOrder changed its argument: %v", configs)
	}
}

// Each store run with both protocols gets a pair at 70 % of the lower of
// the two closed-loop rates; direct, a store run with one protocol only
// and the baselines get none.
func TestProtocolPairs(t *testing.T) {
	at := func(calls int) []result {
		return []result{{calls: calls, window: time.Second, gatewayCPU: time.Second}}
	}
	o := options{concurrency: []int{1, 16}, configs: []string{"direct", "sqlite", "sqlite (baseline)", "sqlite-modern", "sqlite-modern (baseline)", "postgres"}}
	results := map[key][]result{
		{1, "sqlite"}: at(1000), {1, "sqlite-modern"}: at(900), {16, "sqlite"}: at(2000), {16, "sqlite-modern"}: at(2500),
		{1, "postgres"}: at(700), {16, "postgres"}: at(1800),
	}
	want := []pair{{1, "sqlite", "sqlite-modern", 630}, {16, "sqlite", "sqlite-modern", 1400}}
	if got := protocolPairs(o, results); !slices.Equal(got, want) {
		t.Fatalf("protocolPairs = %+v, want %+v", got, want)
	}
}

func TestLoadPairs(t *testing.T) {
	bin := os.Args[0]
	for env, want := range map[string]bool{"": true, "1": true, "0": false} {
		t.Setenv("BENCH_PAIRS", env)
		if o, err := loadArgs([]string{"-gateway", bin, "-upstream", bin}); err != nil || o.pairs != want {
			t.Errorf("BENCH_PAIRS=%q: pairs %v, error %v; want %v", env, o.pairs, err, want)
		}
	}
	t.Setenv("BENCH_PAIRS", "yes")
	if _, err := loadArgs([]string{"-gateway", bin, "-upstream", bin}); err == nil {
		t.Error("BENCH_PAIRS=yes was accepted")
	}
}

// The paired difference is taken within each repetition, so a slow
// repetition that falls on both runs leaves it unchanged.
func TestPairedDiff(t *testing.T) {
	run := func(cpuMicros int64) result {
		return result{calls: 1000, window: time.Second, gatewayCPU: time.Duration(cpuMicros) * time.Millisecond}
	}
	session := []result{run(300), run(600), run(310)}
	modern := []result{run(290), run(590), run(320)}
	d, noDearer := pairedDiff(session, modern)
	if d != -10 || noDearer != 2 {
		t.Fatalf("pairedDiff = %v µs, %d no dearer; want -10 µs, 2", d, noDearer)
	}
}

func TestUpstreamShare(t *testing.T) {
	run := func(gw, up int64) result {
		return result{calls: 1000, window: time.Second, gatewayCPU: time.Duration(gw) * time.Millisecond, upCPU: time.Duration(up) * time.Millisecond}
	}
	// A slow phase raises both processes' CPU per call; the quotient stays.
	if got := upstreamShare([]result{run(600, 300), run(900, 450), run(700, 400)}); got != 2 {
		t.Fatalf("upstreamShare = %v, want 2 (the median of 2, 2 and 1.75)", got)
	}
}
