package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/policies"
)

// Exit codes of `mcpgate policy replay` (docs/policy.md, Replay): 0 when
// the candidate passes, exitUsage for a usage error, exitFlips when the
// flips exceed --fail-on-flips or one hits a --protected tool.
const (
	exitUsage = 2
	exitFlips = 3
)

// decisionPath is the decision-log path of a tools/call decision of the
// supacloud surface (OPA's event "path": the query without "data.", dots
// as slashes); ccDecisionPath the cc_server surface's.
const (
	decisionPath   = "supacloud/decision"
	ccDecisionPath = gateway.SurfaceCCServer + "/decision"
)

// surfaceOfPath is the surface whose decisions a decision-log path
// records, "" for a path replay does not re-decide.
func surfaceOfPath(path string) string {
	switch path {
	case decisionPath:
		return gateway.SurfaceSupaCloud
	case ccDecisionPath:
		return gateway.SurfaceCCServer
	}
	return ""
}

// replayEngines compiles the candidate's engine of each surface on the
// first event of that surface, so a log of one surface needs only that
// surface's package in the candidate.
type replayEngines struct {
	bundle  fs.FS
	engines map[string]*policy.Engine
}

func (r *replayEngines) of(ctx context.Context, surface string) (*policy.Engine, error) {
	if e, ok := r.engines[surface]; ok {
		return e, nil
	}
	e, err := policy.New(ctx, policy.Options{FS: r.bundle, Surface: surface, Edition: gateway.EditionCommunity, CacheSize: -1})
	if err != nil {
		return nil, fmt.Errorf("policy replay: the candidate bundle is refused for the %s surface: %w", surface, err)
	}
	r.engines[surface] = e
	return e, nil
}

// logEvent is one line of the decision log: an OPA decision-log event.
type logEvent struct {
	DecisionID string         `json:"decision_id"`
	Path       string         `json:"path"`
	Input      map[string]any `json:"input"`
	// RawResult is the recorded result, read as Result for decision
	// events only (other paths have other results, such as a list).
	RawResult json.RawMessage   `json:"result"`
	Result    *recordedDecision `json:"-"`
	Bundles   map[string]struct {
		Revision string `json:"revision"`
	} `json:"bundles"`
	Timestamp time.Time `json:"timestamp"`
	Erased    []string  `json:"erased"`
	Masked    []string  `json:"masked"`
	// Custom.Shadow is set on a shadow flip event: the candidate's
	// decision of a call, never enforced, logged beside the live one.
	Custom struct {
		Shadow json.RawMessage `json:"shadow"`
	} `json:"custom"`
}

// recordedDecision is what replay reads of a recorded decision.
type recordedDecision struct {
	Allow       *bool            `json:"allow"`
	Reasons     []gateway.Reason `json:"reasons"`
	Obligations struct {
		ApprovalRequired bool `json:"approval_required"`
	} `json:"obligations"`
}

// replayOptions are the flags of policy replay.
type replayOptions struct {
	bundle, log, workspace, since, until string
	examples, failOnFlips                int
	protected                            []string
	now                                  func() time.Time
}

func newPolicyReplayCmd(out io.Writer) *cobra.Command {
	o := replayOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "replay --bundle DIR --log FILE [--since T] [--until T] [--workspace W] [--examples N] [--fail-on-flips N] [--protected TOOL,…]",
		Short: "re-decide recorded decisions against a candidate bundle and print what flips",
		Long: `Read the decision log (JSONL, one OPA decision-log event per line, as the
gateway writes it), re-decide the input of every supacloud/decision and
ccserver/decision event against the candidate bundle in --bundle (each
against its surface's package), and compare with the recorded
result. It prints the flips (allow_to_deny, deny_to_allow) counted by tool
and principal kind, and the first --examples of them with both reasons, and
how many allowed calls now need a person's approval, or no longer do
(allow_to_approval, approval_to_allow: the flow rule set, say).

Inputs in the log are masked by the bundle's mask rule: an argument the
operator did not opt into is erased or replaced, so a decision that read it
(script.run's slug) may be re-decided on less than the gateway saw. Such
flips are marked "masked".

--since and --until take an RFC 3339 time or a duration back from now
(1h, 30m). Exit status: 0 when the candidate passes, 3 when the flips exceed
--fail-on-flips or any flip is of a --protected tool, 2 for a usage error,
1 for any other failure.`,
		Example: `  mcpgate policy replay --bundle ./candidate --log /var/log/mcpgate/decisions.jsonl --since 1h
  mcpgate policy replay --bundle ./candidate --log decisions.jsonl --fail-on-flips 0 --protected app.deploy,script.run`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return replay(c.Context(), out, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.bundle, "bundle", "", "the candidate bundle: a folder laid out as MCPGATE_POLICY_DIR (required)")
	f.StringVar(&o.log, "log", "", "the decision log to replay, JSONL; - reads standard input (required)")
	f.StringVar(&o.workspace, "workspace", "", "replay only the decisions of this workspace")
	f.StringVar(&o.since, "since", "", "replay only decisions at or after this time (RFC 3339, or a duration back from now such as 1h)")
	f.StringVar(&o.until, "until", "", "replay only decisions before this time (RFC 3339, or a duration back from now)")
	f.IntVar(&o.examples, "examples", 10, "how many flips to print in full")
	f.IntVar(&o.failOnFlips, "fail-on-flips", -1, "exit 3 when more than N decisions flip (-1: never for the count)")
	f.StringSliceVar(&o.protected, "protected", nil, "tools whose every flip exits 3, comma-separated")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(fmt.Errorf("%w (see `%s --help`)", err, c.CommandPath()))
	})
	return cmd
}

// flip is one re-decided event whose allow changed.
type flip struct {
	ev        *logEvent
	direction string
	candidate *gateway.Decision
	masked    bool
}

// replayTally counts what a replay saw.
type replayTally struct {
	read, replayed, otherPath, shadow, filtered, unreadable, noInput, masked int
	ccReplayed                                                               int // of replayed, the ccserver/decision events
	firstUnreadable                                                          string
	revisions                                                                map[string]int
	byTool, byKind                                                           map[string]map[string]int
	flips                                                                    []flip
	reasonChanges                                                            int
	// toApproval and fromApproval count allowed calls whose need of a
	// person's approval changed (allow_to_approval, approval_to_allow).
	toApproval, fromApproval int
}

func replay(ctx context.Context, out io.Writer, o replayOptions) error {
	if o.bundle == "" || o.log == "" {
		return usageError(fmt.Errorf("policy replay: --bundle and --log are required (see `mcpgate policy replay --help`)"))
	}
	since, err := parseWhen("--since", o.since, o.now())
	if err != nil {
		return err
	}
	until, err := parseWhen("--until", o.until, o.now())
	if err != nil {
		return err
	}
	if st, err := os.Stat(o.bundle); err != nil || !st.IsDir() {
		return usageError(fmt.Errorf("policy replay: --bundle %s is not a folder; give the folder of the candidate bundle (its root holds supacloud/)", o.bundle))
	}
	bundle := os.DirFS(o.bundle)
	engines := &replayEngines{bundle: bundle, engines: map[string]*policy.Engine{}}
	if _, err := engines.of(ctx, gateway.SurfaceSupaCloud); err != nil {
		return err
	}
	revision, err := policies.Revision(bundle)
	if err != nil {
		return fmt.Errorf("policy replay: %w", err)
	}
	in, closeLog, err := openLog(o.log)
	if err != nil {
		return err
	}
	defer closeLog()
	t := &replayTally{revisions: map[string]int{}, byTool: map[string]map[string]int{}, byKind: map[string]map[string]int{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		t.read++
		ev, err := decodeEvent(sc.Bytes())
		if err != nil {
			t.unreadable++
			if t.firstUnreadable == "" {
				t.firstUnreadable = fmt.Sprintf("line %d: %v", line, err)
			}
			continue
		}
		surface := surfaceOfPath(ev.Path)
		if surface == "" {
			t.otherPath++
			continue
		}
		if len(ev.Custom.Shadow) > 0 && string(ev.Custom.Shadow) != "null" {
			// A shadow candidate's decision was never enforced: the live
			// decision of the same call is its own event.
			t.shadow++
			continue
		}
		if ev.Input == nil || json.Unmarshal(ev.RawResult, &ev.Result) != nil || ev.Result == nil || ev.Result.Allow == nil {
			t.noInput++
			continue
		}
		if !within(ev, o.workspace, since, until) {
			t.filtered++
			continue
		}
		engine, err := engines.of(ctx, surface)
		if err != nil {
			return err
		}
		if err := t.add(ctx, engine, surface, ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("policy replay: reading %s: %w", o.log, err)
	}
	t.print(out, o, revision)
	return t.verdict(o)
}

// add re-decides ev and counts it.
func (t *replayTally) add(ctx context.Context, engine *policy.Engine, surface string, ev *logEvent) error {
	t.replayed++
	if surface == gateway.SurfaceCCServer {
		t.ccReplayed++
	}
	rev := "(none recorded)"
	if b, ok := ev.Bundles[surface]; ok && b.Revision != "" {
		rev = b.Revision
	}
	t.revisions[rev]++
	masked := len(ev.Erased) > 0 || len(ev.Masked) > 0
	if masked {
		t.masked++
	}
	d, err := engine.DecideInput(ctx, ev.Input)
	if err != nil {
		// The gateway refuses a call whose evaluation fails (fail
		// closed); the replay counts it as the candidate's deny.
		d = &gateway.Decision{Reasons: []gateway.Reason{{Code: "policy.error", Message: gateway.ErrorMessageOf(err) + ": " + err.Error()}}}
	}
	if d.Allow == *ev.Result.Allow {
		if !d.Allow && firstCode(d.Reasons) != firstCode(ev.Result.Reasons) {
			t.reasonChanges++
		}
		// An allowed call that now waits for a person's approval (the
		// flow rule set, say), or no longer does, is counted apart: it
		// still runs once approved.
		switch was := ev.Result.Obligations.ApprovalRequired; {
		case d.Allow && d.Obligations.ApprovalRequired && !was:
			t.toApproval++
		case d.Allow && !d.Obligations.ApprovalRequired && was:
			t.fromApproval++
		}
		return nil
	}
	dir := "allow_to_deny"
	if d.Allow {
		dir = "deny_to_allow"
	}
	count(t.byTool, inputString(ev.Input, "tool", "name"), dir)
	count(t.byKind, inputString(ev.Input, "principal", "kind"), dir)
	t.flips = append(t.flips, flip{ev: ev, direction: dir, candidate: d, masked: masked})
	return nil
}

func count(m map[string]map[string]int, key, dir string) {
	if m[key] == nil {
		m[key] = map[string]int{}
	}
	m[key][dir]++
}

// print writes the report.
func (t *replayTally) print(out io.Writer, o replayOptions, revision string) {
	paths := decisionPath
	if t.ccReplayed > 0 {
		paths = fmt.Sprintf("%s and %d %s", decisionPath, t.ccReplayed, ccDecisionPath)
	}
	fmt.Fprintf(out, "replayed %d %s decisions from %s against %s (revision %s)\n", t.replayed-t.ccReplayed, paths, o.log, o.bundle, revision)
	revs := make([]string, 0, len(t.revisions))
	for r, n := range t.revisions {
		revs = append(revs, fmt.Sprintf("%s (%d)", r, n))
	}
	sort.Strings(revs)
	if len(revs) > 0 {
		fmt.Fprintf(out, "recorded under revision %s\n", strings.Join(revs, ", "))
	}
	fmt.Fprintf(out, "skipped: %d of other paths, %d shadow flip events, %d outside the filters, %d without a decision input or result, %d unreadable\n",
		t.otherPath, t.shadow, t.filtered, t.noInput, t.unreadable)
	if t.firstUnreadable != "" {
		fmt.Fprintf(out, "first unreadable event: %s\n", t.firstUnreadable)
	}
	if t.masked > 0 {
		fmt.Fprintf(out, "%d replayed inputs had masked or erased parts (see docs/policy.md, Replay)\n", t.masked)
	}
	a2d, d2a := 0, 0
	for _, f := range t.flips {
		if f.direction == "allow_to_deny" {
			a2d++
		} else {
			d2a++
		}
	}
	fmt.Fprintf(out, "flips: %d (allow_to_deny %d, deny_to_allow %d); denials whose first reason changed: %d\n", len(t.flips), a2d, d2a, t.reasonChanges)
	if t.toApproval+t.fromApproval > 0 {
		fmt.Fprintf(out, "allowed calls whose approval changed: %d now need a person's approval (allow_to_approval), %d no longer do (approval_to_allow)\n", t.toApproval, t.fromApproval)
	}
	if len(t.flips) == 0 {
		return
	}
	printCounts(out, "TOOL", t.byTool)
	printCounts(out, "PRINCIPAL KIND", t.byKind)
	n := min(o.examples, len(t.flips))
	if n <= 0 {
		return
	}
	fmt.Fprintf(out, "\nfirst %d of %d flips:\n", n, len(t.flips))
	for i, f := range t.flips[:n] {
		ev := f.ev
		mark := ""
		if f.masked {
			mark = " [masked input]"
		}
		fmt.Fprintf(out, "%d. %s %s %s: %s by %s %s in %s (task %s)%s\n", i+1, ev.Timestamp.Format(time.RFC3339), ev.DecisionID,
			inputString(ev.Input, "tool", "name"), f.direction, inputString(ev.Input, "principal", "kind"),
			inputString(ev.Input, "principal", "sub"), inputString(ev.Input, "principal", "workspace_id"),
			inputString(ev.Input, "principal", "task_id"), mark)
		fmt.Fprintf(out, "   recorded:  %s\n", reasonText(*ev.Result.Allow, ev.Result.Reasons))
		fmt.Fprintf(out, "   candidate: %s\n", reasonText(f.candidate.Allow, f.candidate.Reasons))
	}
}

func printCounts(out io.Writer, title string, m map[string]map[string]int) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tALLOW_TO_DENY\tDENY_TO_ALLOW\n", title)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", k, m[k]["allow_to_deny"], m[k]["deny_to_allow"])
	}
	_ = tw.Flush()
}

// verdict is the exit status of the replay as an error (nil: exit 0).
func (t *replayTally) verdict(o replayOptions) error {
	var hit []string
	for _, f := range t.flips {
		tool := inputString(f.ev.Input, "tool", "name")
		if slices.Contains(o.protected, tool) && !slices.Contains(hit, tool) {
			hit = append(hit, tool)
		}
	}
	switch {
	case len(hit) > 0:
		return &exitError{code: exitFlips, err: fmt.Errorf("policy replay: the candidate flips decisions of protected tools: %s", strings.Join(hit, ", "))}
	case o.failOnFlips >= 0 && len(t.flips) > o.failOnFlips:
		return &exitError{code: exitFlips, err: fmt.Errorf("policy replay: %d decisions flip, more than --fail-on-flips %d allows", len(t.flips), o.failOnFlips)}
	}
	return nil
}

func reasonText(allow bool, rs []gateway.Reason) string {
	if allow {
		return "allowed"
	}
	if len(rs) == 0 {
		return "denied (no reason recorded)"
	}
	return "denied: " + rs[0].Code + ": " + rs[0].Message
}

func firstCode(rs []gateway.Reason) string {
	if len(rs) == 0 {
		return ""
	}
	return rs[0].Code
}

// inputString reads a string at path in a recorded input, "" when absent.
func inputString(in map[string]any, path ...string) string {
	var v any = in
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

// decodeEvent parses one event, keeping numbers exact.
func decodeEvent(line []byte) (*logEvent, error) {
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.UseNumber()
	var ev logEvent
	if err := dec.Decode(&ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

// within reports whether ev passes the workspace and time filters.
func within(ev *logEvent, workspace string, since, until time.Time) bool {
	if workspace != "" && inputString(ev.Input, "principal", "workspace_id") != workspace {
		return false
	}
	if !since.IsZero() && ev.Timestamp.Before(since) {
		return false
	}
	return until.IsZero() || ev.Timestamp.Before(until)
}

// parseWhen reads a time flag: RFC 3339, or a duration back from now.
func parseWhen(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageError(fmt.Errorf("%s %q is neither an RFC 3339 time (2026-12-01T09:00:00Z) nor a duration back from now (1h, 30m)", flag, v))
}

// openLog opens the decision log, - for standard input.
func openLog(path string) (io.Reader, func(), error) {
	if path == "-" {
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, usageError(fmt.Errorf("policy replay: cannot read the decision log: %w", err))
	}
	return f, func() { _ = f.Close() }, nil
}
