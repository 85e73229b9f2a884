// Command benchcompare measures what the gateway adds to an MCP tool call
// (`make bench-compare`). It compares three configurations:
//
//   - direct: MCP clients call the upstream (test/benchupstream) themselves;
//   - sqlite: the same calls through `mcpgate serve` on the embedded store;
//   - postgres: through `mcpgate serve` on PostgreSQL.
//
// Each measurement is closed loop: c MCP sessions (the Go SDK client over
// Streamable HTTP) each call the upstream's echo tool again as soon as the
// last call returned, for BENCH_DURATION after a warm-up of BENCH_WARMUP.
// Every run starts fresh processes (upstream, gateway) and a fresh store (a
// new SQLite file, a new PostgreSQL database), and the configurations are
// interleaved (direct, sqlite, postgres, direct, …) so that a slow phase of
// the machine falls on all of them. Client, upstream, gateway and
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
// (3), BENCH_CONCURRENCY (1,16), BENCH_CONFIGS (direct,sqlite,postgres),
// BENCH_PROFILE (a folder: a CPU profile of each gateway run, taken through
// MCPGATE_PPROF over the measured window) and
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

func load() (options, error) {
	o := options{}
	flag.StringVar(&o.gatewayBin, "gateway", "bin/mcpgate", "the mcpgate binary")
	flag.StringVar(&o.upstreamBin, "upstream", "bin/benchupstream", "the benchupstream binary")
	flag.StringVar(&o.baselineBin, "baseline", "", "another mcpgate binary (an earlier build, say) to run beside -gateway in every gateway configuration, interleaved; its rows are labelled \"baseline\"")
	flag.Parse()
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
	for f := range strings.SplitSeq(env("BENCH_CONFIGS", "direct,sqlite,postgres"), ",") {
		f = strings.TrimSpace(f)
		if f != cfgDirect && f != cfgSQLite && f != cfgPostgres {
			return o, fmt.Errorf("BENCH_CONFIGS: %q is not direct, sqlite or postgres", f)
		}
		o.configs = append(o.configs, f)
		if o.baselineBin != "" && f != cfgDirect {
			o.configs = append(o.configs, f+baselineSuffix)
		}
	}
	o.pgURL = env("MCPGATE_TEST_DATABASE_URL", defaultPGURL)
	if o.profileDir = os.Getenv("BENCH_PROFILE"); o.profileDir != "" {
		if e := os.MkdirAll(o.profileDir, 0o755); e != nil {
			return o, fmt.Errorf("BENCH_PROFILE=%q: %v", o.profileDir, e)
		}
	}
	bins := []string{o.gatewayBin, o.upstreamBin}
	if o.baselineBin != "" {
		bins = append(bins, o.baselineBin)
	}
	for _, bin := range bins {
		if _, e := os.Stat(bin); e != nil && (bin == o.upstreamBin || slices.ContainsFunc(o.configs, func(c string) bool { return c != cfgDirect })) {
			return o, fmt.Errorf("%s: %v (make bench-compare builds it)", bin, e)
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
			for _, cfg := range o.configs {
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
	return nil
}

type key struct {
	c      int
	config string
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
	up              float64
	started, exited int // PostgreSQL backends, summed over the runs
}

func summarize(rs []result) summary {
	var s summary
	var rate, p50, p99, gw, pg, pgAll, up []float64
	for _, r := range rs {
		rate = append(rate, r.rate())
		p50 = append(p50, float64(r.p50.Microseconds()))
		p99 = append(p99, float64(r.p99.Microseconds()))
		up = append(up, r.perCall(r.upCPU))
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
	s.rate, s.p50, s.p99, s.up = median(rate), median(p50), median(p99), median(up)
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
	fmt.Fprintf(&b, "\n## bench-compare: echo over MCP Streamable HTTP, closed loop\n\n")
	fmt.Fprintf(&b, "%s, %d CPUs, %s; %d repetition(s) of %s after a %s warm-up, fresh processes and store per run; medians over the repetitions.\n\n",
		host, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), o.reps, o.duration, o.warmup)
	b.WriteString("| c | config | calls/s | p50 µs | p99 µs | Δp50 vs direct µs | × direct calls/s | gateway CPU µs/call | PostgreSQL CPU µs/call | PostgreSQL server CPU µs/call | upstream CPU µs/call |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var notes []string
	for _, c := range o.concurrency {
		direct, hasDirect := results[key{c, cfgDirect}]
		var d summary
		if hasDirect {
			d = summarize(direct)
		}
		for _, cfg := range o.configs {
			s := summarize(results[key{c, cfg}])
			delta, ratio := "—", "—"
			if hasDirect && cfg != cfgDirect {
				delta = fmt.Sprintf("%+.0f", s.p50-d.p50)
				ratio = fmt.Sprintf("%.2f", s.rate/d.rate)
			}
			fmt.Fprintf(&b, "| %d | %s | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %.1f |\n",
				c, cfg, s.rate, s.p50, s.p99, delta, ratio, num(s.gw), num(s.pg), num(s.pgAll), s.up)
			if s.started > 0 || s.exited > 0 {
				notes = append(notes, fmt.Sprintf("c=%d %s: %d PostgreSQL processes of the run's database started and %d exited inside the measured windows (the gateway's pool opening and closing connections, or autovacuum workers); the CPU of one that exited is counted up to its last 50 ms sample, so that column is a lower bound.", c, cfg, s.started, s.exited))
			}
		}
	}
	b.WriteString("\nCPU per call is user + system time from /proc/<pid>/stat over the measured window divided by the calls completed in it. \"PostgreSQL\" is the backends (and autovacuum workers) serving the run's own database; \"PostgreSQL server\" is every process of the server (postmaster, reaped and live children), so it adds the shared background processes (WAL writer, checkpointer, …) and whatever else uses the server meanwhile.\n")
	for _, n := range notes {
		b.WriteString("\n" + n + "\n")
	}
	return b.String()
}

func num(v float64) string {
	if math.IsNaN(v) { // not measured
		return "—"
	}
	return fmt.Sprintf("%.1f", v)
}
