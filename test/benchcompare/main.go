// Command benchcompare measures what the gateway adds to an MCP tool call
// (`make bench-compare`). It compares three configurations:
//
//   - direct: MCP clients call the upstream (test/benchupstream) themselves;
//   - sqlite: the same calls through `mcpgate serve` on the embedded store;
//   - postgres: through `mcpgate serve` on PostgreSQL;
//
// each with clients of protocol 2025-11-25 (initialize, then a session) and,
// named with the suffix -modern (sqlite-modern, …), with clients of the
// stateless protocol 2026-07-28 (server/discover, then every call on its
// own with its _meta and MCP-Protocol-Version, Mcp-Method and Mcp-Name
// headers), so that the session path and the stateless path are measured
// side by side in one run.
//
// A store's configuration may name variants, none in the default, after
// its store and -modern, in this order, so that their rows beside the
// plain ones give what each costs per call:
//
//   - -bridged (sqlite-bridged, …): two upstreams behind the gateway,
//     declared in MCPGATE_UPSTREAMS_FILE, the sessions calling their
//     bridged echo tools (half each) instead of the one upstream of
//     MCPGATE_UPSTREAM_URL;
//   - -flow (postgres-flow, …): the shipped flow rule set switched on for
//     the workspace through the admin API;
//   - -traced (sqlite-traced, postgres-modern-traced, …): traces on,
//     every call sampled, its spans exported over OTLP/HTTP to a sink in
//     this process.
//
// Three more configurations, not in the default, are the floor: what a Go
// net/http gateway that does nothing but forward adds on this machine,
// with the gateway's two store round trips per tools/call (floor-sqlite,
// floor-postgres) or with none (floor). They run test/benchfloor in the
// gateway's place, with session clients only (floorStore).
//
// Each measurement is closed loop: c MCP sessions (the Go SDK client over
// Streamable HTTP) each call the upstream's echo tool again as soon as the
// last call returned, for BENCH_DURATION after a warm-up of BENCH_WARMUP.
// Every run starts fresh processes (upstream, gateway) and a fresh store (a
// new SQLite file, a new PostgreSQL database), and the configurations are
// interleaved (direct, sqlite, postgres, then postgres, sqlite, direct, …:
// reversed every other repetition, runOrder) so that a slow phase of the
// machine falls on all of them and no configuration always follows the same
// one. Client, upstream, gateway and
// PostgreSQL share the machine.
//
// It prints, per concurrency and configuration, the medians over the
// repetitions of: calls/s, p50 and p99 call latency, and the CPU time per
// call of the gateway, of PostgreSQL's backends for the run (and of the
// whole PostgreSQL server, an upper bound) and of the upstream (from
// procfs; see backendMeter for how PostgreSQL's is counted),
// with p50's difference to direct and the throughput ratio to direct, as a
// Markdown table on stdout. Progress goes to stderr.
//
// Environment: BENCH_DURATION (default 10s), BENCH_WARMUP (1s), BENCH_REPS
// (3), BENCH_CONCURRENCY (1,16), BENCH_CONFIGS (defaultConfigs:
// direct,sqlite,sqlite-modern,postgres,postgres-modern; direct-modern,
// with the upstream in the SDK's stateless mode, is also known),
// BENCH_PROFILE (a folder: a CPU profile of each gateway run, taken through
// MCPGATE_PPROF over the measured window), BENCH_RATE (calls/s over all
// sessions: each session paces its calls so that every configuration runs
// at the same rate, and CPU per call compares paths at equal load instead
// of at each one's own maximum; unset or 0 for the closed loop),
// BENCH_PAIRS (1, the default: after the closed loop, each store's session
// and 2026-07-28 configurations run again, both at one paced rate, and a
// second table compares their CPU per call; 0: not), BENCH_TRACES_SAMPLER
// and BENCH_TRACES_SAMPLER_ARG (the -traced configurations' OTEL_TRACES_SAMPLER
// and its argument; default always_on) and
// MCPGATE_TEST_DATABASE_URL (the PostgreSQL server, where each run creates
// and drops a database of its own).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// defaultConfigs is BENCH_CONFIGS when unset: each store with session
// clients and with 2026-07-28 clients, side by side.
const defaultConfigs = "direct,sqlite,sqlite-modern,postgres,postgres-modern"

const defaultPGURL = "postgres://mcpgate:mcpgate@127.0.0.1:5432/mcpgate_test?sslmode=disable"

func main() {
	o, err := load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		stop()
		os.Exit(1)
	}
}

func load() (options, error) { return loadArgs(os.Args[1:]) }

// loadArgs reads the flags in args and the environment.
func loadArgs(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("benchcompare", flag.ExitOnError)
	fs.StringVar(&o.gatewayBin, "gateway", "bin/mcpgate", "the mcpgate binary")
	fs.StringVar(&o.upstreamBin, "upstream", "bin/benchupstream", "the benchupstream binary")
	fs.StringVar(&o.floorBin, "floor", "bin/benchfloor", "the benchfloor binary (the floor configurations)")
	fs.StringVar(&o.baselineBin, "baseline", "", "another mcpgate binary (an earlier build, say) to run beside -gateway in every gateway configuration, interleaved; its rows are labelled \"baseline\"")
	_ = fs.Parse(args)
	var err error
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	dur := func(name, def string) time.Duration {
		d, e := time.ParseDuration(env(name, def))
		if e != nil || d <= 0 {
			err = fmt.Errorf("%s=%q: want a positive duration such as 10s", name, os.Getenv(name))
		}
		return d
	}
	o.duration = dur("BENCH_DURATION", "10s")
	o.warmup = dur("BENCH_WARMUP", "1s")
	if o.reps, _ = strconv.Atoi(env("BENCH_REPS", "3")); o.reps < 1 {
		return o, fmt.Errorf("BENCH_REPS=%q: want a positive whole number", os.Getenv("BENCH_REPS"))
	}
	for f := range strings.SplitSeq(env("BENCH_CONCURRENCY", "1,16"), ",") {
		c, e := strconv.Atoi(strings.TrimSpace(f))
		if e != nil || c < 1 || c > 1000 {
			return o, fmt.Errorf("BENCH_CONCURRENCY=%q: want a comma-separated list of session counts (1 to 1000)", os.Getenv("BENCH_CONCURRENCY"))
		}
		o.concurrency = append(o.concurrency, c)
	}
	for f := range strings.SplitSeq(env("BENCH_CONFIGS", defaultConfigs), ",") {
		f = strings.TrimSpace(f)
		store, _, _ := parseConfig(f)
		if strings.HasSuffix(f, baselineSuffix) || store != cfgDirect && !isGateway(f) && !isFloor(f) || variantsOf(f).any() && !isGateway(f) {
			return o, fmt.Errorf("BENCH_CONFIGS: %q is not direct, sqlite or postgres, with or without %s (and a store with any of %s after it, in that order), nor %s, %s or %s (session clients only)",
				f, modernSuffix, strings.Join(variantSuffixes, ", "), cfgFloor, cfgFloorSQLite, cfgFloorPostgres)
		}
		if slices.Contains(o.configs, f) {
			return o, fmt.Errorf("BENCH_CONFIGS: %q is listed twice", f)
		}
		o.configs = append(o.configs, f)
		if o.baselineBin != "" && isGateway(f) {
			o.configs = append(o.configs, f+baselineSuffix)
		}
	}
	if r := os.Getenv("BENCH_RATE"); r != "" {
		v, e := strconv.ParseFloat(r, 64)
		if e != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return o, fmt.Errorf("BENCH_RATE=%q: want calls per second over all sessions (0 or unset: closed loop)", r)
		}
		o.rate = v
	}
	switch v := env("BENCH_PAIRS", "1"); v {
	case "1", "0":
		o.pairs = v == "1"
	default:
		return o, fmt.Errorf("BENCH_PAIRS=%q: want 1 (run each store's session and 2026-07-28 configurations again at one rate, the default) or 0", v)
	}
	o.sampler = []string{"OTEL_TRACES_SAMPLER=" + env("BENCH_TRACES_SAMPLER", "always_on")}
	if a := os.Getenv("BENCH_TRACES_SAMPLER_ARG"); a != "" {
		o.sampler = append(o.sampler, "OTEL_TRACES_SAMPLER_ARG="+a)
	}
	o.pgURL = env("MCPGATE_TEST_DATABASE_URL", defaultPGURL)
	if o.profileDir = os.Getenv("BENCH_PROFILE"); o.profileDir != "" {
		if e := os.MkdirAll(o.profileDir, 0o755); e != nil {
			return o, fmt.Errorf("BENCH_PROFILE=%q: %v", o.profileDir, e)
		}
	}
	// Each binary is needed only when a configuration runs it.
	for _, b := range []struct {
		bin    string
		needed bool
	}{
		{o.upstreamBin, true},
		{o.gatewayBin, slices.ContainsFunc(o.configs, isGateway)},
		{o.baselineBin, o.baselineBin != ""},
		{o.floorBin, slices.ContainsFunc(o.configs, isFloor)},
	} {
		if _, e := os.Stat(b.bin); e != nil && b.needed {
			return o, fmt.Errorf("%s: %v (make bench-compare builds it)", b.bin, e)
		}
	}
	return o, err
}

// bench runs every repetition and prints the table.
func bench(ctx context.Context, o options, out, progress io.Writer) error {
	tmp, err := os.MkdirTemp("", "bench-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	o.tmp = tmp

	results := map[key][]result{}
	total, n := o.reps*len(o.concurrency)*len(o.configs), 0
	for rep := range o.reps {
		for _, c := range o.concurrency {
			for _, cfg := range runOrder(o.configs, rep) {
				n++
				r, err := run(ctx, o, cfg, c)
				if err != nil {
					return fmt.Errorf("rep %d, c=%d, %s: %w", rep+1, c, cfg, err)
				}
				results[key{c, cfg}] = append(results[key{c, cfg}], r)
				fmt.Fprintf(progress, "[%d/%d] rep %d c=%-3d %-8s %8.0f calls/s  p50 %6d µs  p99 %6d µs  gateway %s  pg %s  upstream %.0f µs/call%s\n",
					n, total, rep+1, c, cfg, r.rate(), r.p50.Microseconds(), r.p99.Microseconds(),
					cpuCell(r, r.gatewayCPU), pgCell(r), r.perCall(r.upCPU), churnNote(r.pg))
			}
		}
	}
	fmt.Fprint(out, table(o, results))
	if o.rate > 0 || !o.pairs {
		return nil
	}
	pairs := protocolPairs(o, results)
	if len(pairs) == 0 {
		return nil
	}
	paced := map[key][]result{}
	total, n = o.reps*2*len(pairs), 0
	for rep := range o.reps {
		for _, p := range pairs {
			po := o
			po.rate = p.rate
			for _, cfg := range runOrder([]string{p.session, p.modern}, rep) {
				n++
				r, err := run(ctx, po, cfg, p.c)
				if err != nil {
					return fmt.Errorf("paced pair, rep %d, c=%d, %s at %.0f calls/s: %w", rep+1, p.c, cfg, p.rate, err)
				}
				paced[key{p.c, cfg}] = append(paced[key{p.c, cfg}], r)
				fmt.Fprintf(progress, "[pair %d/%d] rep %d c=%-3d %-16s paced at %.0f: %8.0f calls/s  gateway %s  pg %s  upstream %.0f µs/call\n",
					n, total, rep+1, p.c, cfg, p.rate, r.rate(), cpuCell(r, r.gatewayCPU), pgCell(r), r.perCall(r.upCPU))
			}
		}
	}
	fmt.Fprint(out, pairTable(pairs, paced))
	return nil
}

// pair is a session configuration and its 2026-07-28 counterpart (sqlite
// and sqlite-modern, say) at one concurrency, run again at one paced rate.
type pair struct {
	c               int
	session, modern string
	rate            float64 // calls/s over all sessions
}

// pairRateShare is the share of the slower closed-loop rate of a pair at
// which both of its configurations run again: below either one's maximum,
// so that each reaches the rate and their CPU per call is compared at one
// load.
const pairRateShare = 0.7

// protocolPairs are the pairs of the closed-loop results: every store run
// both with session clients and with 2026-07-28 clients (baselines left
// out), each at pairRateShare of the lower of the two closed-loop rates.
// In the closed loop a configuration whose clients cost more (the Go SDK
// at 2026-07-28) leaves the gateway fewer calls per second, and every
// process spends more CPU per call at a lower rate; at one rate the
// gateway's CPU per call compares the two paths themselves.
func protocolPairs(o options, results map[key][]result) []pair {
	var pairs []pair
	for _, c := range o.concurrency {
		for _, cfg := range o.configs {
			store, modern, baseline := parseConfig(cfg)
			if modern || baseline || store == cfgDirect || !slices.Contains(o.configs, cfg+modernSuffix) {
				continue
			}
			rate := min(summarize(results[key{c, cfg}]).rate, summarize(results[key{c, cfg + modernSuffix}]).rate)
			pairs = append(pairs, pair{c: c, session: cfg, modern: cfg + modernSuffix, rate: math.Round(rate * pairRateShare)})
		}
	}
	return pairs
}

// pairTable renders the paced pairs: per pair the gateway's (and
// PostgreSQL's) CPU per call of each path at the same rate, and the
// 2026-07-28 path's difference, both as the difference of the medians and
// as the median of the differences within each repetition (the two runs
// of a repetition follow each other, so a slow phase of the machine falls
// on both), with the number of repetitions in which it cost the gateway
// no more than the session path.
func pairTable(pairs []pair, paced map[key][]result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Session and 2026-07-28 paths at one rate\n\n")
	fmt.Fprintf(&b, "Each store's session and 2026-07-28 configurations again, both paced at one rate (%.0f %% of the lower of their closed-loop rates above), one after the other in each repetition; medians over the repetitions. In the closed loop the 2026-07-28 rows run at a lower rate when their clients cost more, and at a lower rate every process spends more CPU per call; here the two paths carry the same load. \"Δ within repetitions\" is the median over the repetitions of the 2026-07-28 run's gateway CPU per call minus its session run's, and \"no dearer\" counts the repetitions in which that difference was at most 0.\n\n", 100*pairRateShare)
	b.WriteString("| c | store | paced calls/s | reached, session / 2026-07-28 | gateway CPU µs/call, session | gateway CPU µs/call, 2026-07-28 | Δ medians | Δ within repetitions | no dearer | gateway ÷ upstream CPU, session / 2026-07-28 | PostgreSQL CPU µs/call, session / 2026-07-28 |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range pairs {
		rs, rm := paced[key{p.c, p.session}], paced[key{p.c, p.modern}]
		s, m := summarize(rs), summarize(rm)
		d, cheaper := pairedDiff(rs, rm)
		pg := "—"
		if !math.IsNaN(s.pg) {
			pg = fmt.Sprintf("%.1f / %.1f", s.pg, m.pg)
		}
		fmt.Fprintf(&b, "| %d | %s | %.0f | %.0f / %.0f | %.1f | %.1f | %+.1f %% | %+.1f µs (%+.1f %%) | %d of %d | %.3f / %.3f | %s |\n",
			p.c, p.session, p.rate, s.rate, m.rate, s.gw, m.gw, 100*(m.gw-s.gw)/s.gw, d, 100*d/s.gw, cheaper, min(len(rs), len(rm)),
			upstreamShare(rs), upstreamShare(rm), pg)
	}
	b.WriteString("\n\"gateway ÷ upstream CPU\" is the median over the repetitions of each run's gateway CPU per call divided by its upstream's. Both paths send the upstream the same requests on the same kind of session, so the upstream's CPU per call moves only with the machine (its phase, its caches, the other tenants), and the quotient takes that out of the comparison.\n")
	return b.String()
}

// upstreamShare is the median over rs of each run's gateway CPU per call
// divided by its upstream's CPU per call.
func upstreamShare(rs []result) float64 {
	var qs []float64
	for _, r := range rs {
		if up := r.perCall(r.upCPU); up > 0 && r.gatewayCPU >= 0 {
			qs = append(qs, r.perCall(r.gatewayCPU)/up)
		}
	}
	return median(qs)
}

// pairedDiff is the median over the repetitions of modern's gateway CPU
// per call minus session's in the same repetition (µs), and in how many
// repetitions that difference was at most 0.
func pairedDiff(session, modern []result) (float64, int) {
	var ds []float64
	noDearer := 0
	for i := range min(len(session), len(modern)) {
		d := modern[i].perCall(modern[i].gatewayCPU) - session[i].perCall(session[i].gatewayCPU)
		ds = append(ds, d)
		if d <= 0 {
			noDearer++
		}
	}
	return median(ds), noDearer
}

type key struct {
	c      int
	config string
}

// runOrder is the order of the configurations in repetition rep (from 0):
// as listed, and reversed in every other repetition. A run pays for what
// the one before it left behind (on PostgreSQL the previous run's dropped
// database and dirty buffers: postgres-modern, always run right after
// postgres, measured 14 % more gateway CPU per call at c=16 than postgres,
// and the same as postgres with the order reversed), so alternating the
// order spreads that cost over the configurations instead of charging it
// to the same one every time.
func runOrder(configs []string, rep int) []string {
	if rep%2 == 0 {
		return configs
	}
	r := slices.Clone(configs)
	slices.Reverse(r)
	return r
}

func cpuCell(r result, cpu time.Duration) string {
	if cpu < 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f µs/call", r.perCall(cpu))
}

func pgCell(r result) string {
	if r.pg == nil {
		return "—"
	}
	return cpuCell(r, r.pg.CPU) + fmt.Sprintf(" (server %.0f)", r.perCall(r.pg.Server))
}

func churnNote(u *backendUsage) string {
	if u == nil || (u.Started == 0 && u.Exited == 0) {
		return ""
	}
	return fmt.Sprintf("  (pg processes: %d, %d started and %d exited inside the window)", u.Backends, u.Started, u.Exited)
}

// summary is the medians of one configuration's repetitions.
type summary struct {
	rate, p50, p99  float64 // calls/s, µs, µs
	gw, pg, pgAll   float64 // CPU µs per call; NaN when not measured
	up, client      float64
	started, exited int // PostgreSQL backends, summed over the runs
}

func summarize(rs []result) summary {
	var s summary
	var rate, p50, p99, gw, pg, pgAll, up, client []float64
	for _, r := range rs {
		rate = append(rate, r.rate())
		p50 = append(p50, float64(r.p50.Microseconds()))
		p99 = append(p99, float64(r.p99.Microseconds()))
		up = append(up, r.perCall(r.upCPU))
		client = append(client, r.perCall(r.clientCPU))
		if r.gatewayCPU >= 0 {
			gw = append(gw, r.perCall(r.gatewayCPU))
		}
		if r.pg != nil {
			pg = append(pg, r.perCall(r.pg.CPU))
			pgAll = append(pgAll, r.perCall(r.pg.Server))
			s.started += r.pg.Started
			s.exited += r.pg.Exited
		}
	}
	s.rate, s.p50, s.p99, s.up, s.client = median(rate), median(p50), median(p99), median(up), median(client)
	s.gw, s.pg, s.pgAll = nanIfEmpty(gw), nanIfEmpty(pg), nanIfEmpty(pgAll)
	return s
}

func nanIfEmpty(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	return median(vs)
}

// table renders the results as Markdown.
func table(o options, results map[key][]result) string {
	var b strings.Builder
	host, _ := os.Hostname()
	loop := "closed loop"
	if o.rate > 0 {
		loop = fmt.Sprintf("paced at %.0f calls/s over all sessions (BENCH_RATE)", o.rate)
	}
	fmt.Fprintf(&b, "\n## bench-compare: echo over MCP Streamable HTTP, %s\n\n", loop)
	fmt.Fprintf(&b, "%s, %d CPUs, %s; %d repetition(s) of %s after a %s warm-up, fresh processes and store per run; medians over the repetitions.\n\n",
		host, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), o.reps, o.duration, o.warmup)
	b.WriteString("| c | config | protocol | calls/s | p50 µs | p99 µs | Δp50 vs direct µs | Δp99 vs direct µs | × direct calls/s | gateway CPU µs/call | PostgreSQL CPU µs/call | PostgreSQL server CPU µs/call | upstream CPU µs/call | client CPU µs/call |\n")
	b.WriteString("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var notes []string
	for _, c := range o.concurrency {
		for _, cfg := range o.configs {
			s := summarize(results[key{c, cfg}])
			delta, delta99, ratio := "—", "—", "—"
			if ref, ok := directOf(o.configs, cfg); ok {
				d := summarize(results[key{c, ref}])
				delta = fmt.Sprintf("%+.0f", s.p50-d.p50)
				delta99 = fmt.Sprintf("%+.0f", s.p99-d.p99)
				ratio = fmt.Sprintf("%.2f", s.rate/d.rate)
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %.1f | %.1f |\n",
				c, cfg, sessionVersion(cfg), s.rate, s.p50, s.p99, delta, delta99, ratio, num(s.gw), num(s.pg), num(s.pgAll), s.up, s.client)
			if s.started > 0 || s.exited > 0 {
				notes = append(notes, fmt.Sprintf("c=%d %s: %d PostgreSQL processes of the run's database started and %d exited inside the measured windows (the gateway's pool opening and closing connections, or autovacuum workers); the CPU of one that exited is counted up to its last 50 ms sample, so that column is a lower bound.", c, cfg, s.started, s.exited))
			}
		}
	}
	b.WriteString("\nprotocol is what the clients speak: 2025-11-25 with initialize and a session, 2026-07-28 statelessly (server/discover, then every call with its own _meta and headers, no session); Δp50, Δp99 (the latency the gateway adds at the median and at the 99th percentile: a row's percentile minus direct's) and × direct of every gateway row are against direct, whose upstream (stateful, as behind every gateway row) is not direct-modern's (the SDK's stateless mode, the only one in which it serves 2026-07-28).\n")
	b.WriteString("\nCPU per call is user + system time from /proc/<pid>/stat over the measured window divided by the calls completed in it. \"PostgreSQL\" is the backends (and autovacuum workers) serving the run's own database; \"PostgreSQL server\" is every process of the server (postmaster, reaped and live children), so it adds the shared background processes (WAL writer, checkpointer, …) and whatever else uses the server meanwhile. \"client\" is the benchmark's own process, where the c load clients run (the Go SDK; at 2026-07-28 it sends _meta and headers with every call): the cores are shared, so a client that costs more leaves less for the rest, fewer calls/s, and at lower rates every process spends more CPU per call.\n")
	if slices.ContainsFunc(o.configs, isFloor) {
		b.WriteString("\nThe floor rows run test/benchfloor in the gateway's place: a net/http forwarder with no auth, policy or limits that, on floor-sqlite and floor-postgres, inserts one row per tools/call before forwarding it (committed synchronously) and updates it after (on PostgreSQL with synchronous_commit off), the least a Go gateway with the gateway's two store round trips adds here; their \"gateway CPU\" is the benchfloor process.\n")
	}
	if slices.ContainsFunc(o.configs, func(cfg string) bool { return variantsOf(cfg).bridged }) {
		fmt.Fprintf(&b, "\nThe -bridged rows put two upstreams (two benchupstream processes) behind the gateway through MCPGATE_UPSTREAMS_FILE, the sessions calling their bridged tools %s in turn, instead of the one upstream of MCPGATE_UPSTREAM_URL; their upstream CPU is both processes'.\n", strings.Join(bridgedTools, " and "))
	}
	if slices.ContainsFunc(o.configs, func(cfg string) bool { return variantsOf(cfg).flow }) {
		b.WriteString("\nThe -flow rows switch the shipped flow rule set on for the workspace (PUT /admin/v1/workspaces/{id}/flow-rules): every call loads its session's history and its reservation records it.\n")
	}
	for _, n := range notes {
		b.WriteString("\n" + n + "\n")
	}
	return b.String()
}

// directOf is the direct configuration a gateway configuration's Δp50, Δp99 and
// ratio are measured against: direct, whose upstream is the one every
// gateway row has behind it (direct-modern's runs in the SDK's stateless
// mode, which costs the upstream more); ok is false for a direct
// configuration, or when direct was not run.
func directOf(configs []string, cfg string) (string, bool) {
	if store, _, _ := parseConfig(cfg); store == cfgDirect || !slices.Contains(configs, cfgDirect) {
		return "", false
	}
	return cfgDirect, true
}

func num(v float64) string {
	if math.IsNaN(v) { // not measured
		return "—"
	}
	return fmt.Sprintf("%.1f", v)
}
