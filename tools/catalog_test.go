package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// seedTools lists every tool of docs/requirements.md#tiers by group, in
// the seed's order, typed from the seed so a typo in catalog.json fails.
var seedTools = []struct {
	group string
	names []string
}{
	{"baseline", []string{
		"delegate_subtask", "get_subtask_result", "cancel_subtask",
		"memory.search", "memory.get", "memory.list_recent", "memory.propose_review",
		"outcome.recent_for_profile",
	}},
	{"read", []string{
		// Workspace and platform reads
		"workspace.info", "projects.list", "project.get", "tasks.list_active", "tasks.get",
		"runners.status", "schedules.list", "resources.list", "apps.list", "app.get",
		"workflows.list", "workflow.get", "app.migration.list",
		// Run observation
		"run.list", "run.get", "run.events", "approvals.list", "backlog.list", "backlog.get",
		// Source reads (W7-3)
		"app.files.list", "app.files.get", "script.get", "script.list", "app.builds.list",
		// Issue reads, conversation reads, documentation and contract reads
		"issue.get", "issue.list", "conversation.get", "conversation.list",
		"docs.search", "docs.get", "spec.get",
	}},
	{"ops", []string{
		"workflow.trigger", "schedule.create", "schedule.update", "schedule.pause", "schedule.resume",
		"repo_sync.trigger", "issue.comment", "issue.transition", "pr.create",
		"conversation.reply", "conversation.assign", "conversation.resolve", "conversation.handoff",
		"task.create", "task.cancel", "task.intervene", "approval.decide", "run.rerun_node",
		"permission.grant", "permission.revoke",
	}},
	{"carve-out", []string{"script.run"}},
	{"scaffold", []string{
		"scaffold.script.propose", "scaffold.app.propose", "scaffold.app.file_upsert.propose",
		"scaffold.workflow.propose", "task.create_for_app_scaffold", "task.create_for_script_scaffold",
	}},
	{"deploy", []string{"app.deploy", "app.undeploy", "app.pause", "app.resume", "app.migration.apply"}},
}

// externalTools are the tools docs/requirements.md#external-tools-list lets a coordinator reach with
// mcp:read (runs, tasks, backlog, approvals, memories, docs) or mcp:ops.
var externalTools = []string{
	"run.list", "run.get", "run.events", "tasks.list_active", "tasks.get",
	"backlog.list", "backlog.get", "approvals.list",
	"memory.search", "memory.get", "memory.list_recent",
	"docs.search", "docs.get", "spec.get",
	"workflow.trigger", "task.create", "task.intervene", "task.cancel",
	"approval.decide", "run.rerun_node",
	"schedule.create", "schedule.update", "schedule.pause", "schedule.resume",
}

func mustLoad(t testing.TB) *Catalog {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// group names the seed group of a tool: its tier, or "carve-out" for script.run.
func group(tool Tool) string {
	if tool.CarveOut {
		return "carve-out"
	}
	return string(tool.Tier)
}

func TestLoadCountsPerTier(t *testing.T) {
	c := mustLoad(t)
	got := map[string]int{}
	for _, tool := range c.Tools() {
		got[group(tool)]++
	}
	want := map[string]int{"baseline": 8, "read": 31, "ops": 20, "carve-out": 1, "scaffold": 6, "deploy": 5}
	for g, n := range want {
		if got[g] != n {
			t.Errorf("group %s: %d tools, want %d", g, got[g], n)
		}
	}
	if c.Len() != 71 || len(c.Tools()) != 71 {
		t.Errorf("Len() = %d, len(Tools()) = %d, want 71", c.Len(), len(c.Tools()))
	}
}

func TestLoadNamesAndOrderMatchSeed(t *testing.T) {
	c := mustLoad(t)
	var want, wantGroup []string
	for _, g := range seedTools {
		for _, n := range g.names {
			want = append(want, n)
			wantGroup = append(wantGroup, g.group)
		}
	}
	tools := c.Tools()
	for i, n := range want {
		tool, ok := c.Lookup(n)
		if !ok {
			t.Errorf("seed tool %q missing from the catalog", n)
			continue
		}
		if group(*tool) != wantGroup[i] {
			t.Errorf("%s: group %s, want %s", n, group(*tool), wantGroup[i])
		}
		if i < len(tools) && tools[i].Name != n {
			t.Errorf("Tools()[%d] = %q, want %q (seed order)", i, tools[i].Name, n)
		}
	}
	for _, tool := range tools {
		if !slices.Contains(want, tool.Name) {
			t.Errorf("catalog tool %q is not in docs/requirements.md#tiers", tool.Name)
		}
	}
}

func TestLoadFlags(t *testing.T) {
	c := mustLoad(t)
	limitKind := map[string]string{
		"scaffold.script.propose": LimitKindProposal, "scaffold.app.propose": LimitKindProposal,
		"scaffold.app.file_upsert.propose": LimitKindProposal, "scaffold.workflow.propose": LimitKindProposal,
		"task.create_for_app_scaffold": LimitKindTaskSpawn, "task.create_for_script_scaffold": LimitKindTaskSpawn,
	}
	baselineReads := []string{"get_subtask_result", "memory.search", "memory.get", "memory.list_recent", "outcome.recent_for_profile"}
	for _, tool := range c.Tools() {
		t.Run(tool.Name, func(t *testing.T) {
			checks := []struct {
				flag      string
				got, want any
			}{
				{"carve_out", tool.CarveOut, tool.Name == "script.run"},
				{"confirmation", tool.Confirmation, tool.Name == "app.deploy" || tool.Name == "app.migration.apply"},
				{"limit_kind", tool.LimitKind, limitKind[tool.Name]},
				{"external", tool.External, slices.Contains(externalTools, tool.Name)},
				{"read_only", tool.ReadOnly, tool.Tier == gateway.TierRead || slices.Contains(baselineReads, tool.Name)},
			}
			for _, ck := range checks {
				if ck.got != ck.want {
					t.Errorf("%s = %v, want %v", ck.flag, ck.got, ck.want)
				}
			}
			if strings.TrimSpace(tool.Description) == "" || strings.Contains(tool.Description, "\n") {
				t.Errorf("description must be one non-empty line, got %q", tool.Description)
			}
		})
	}
}

// TestSchemasRealistic checks every tool's schema against arguments built
// from it: the minimal object is valid, workspace_id is accepted, an unknown
// property is refused, and dropping any required property is refused.
func TestSchemasRealistic(t *testing.T) {
	c := mustLoad(t)
	for _, tool := range c.Tools() {
		t.Run(tool.Name, func(t *testing.T) {
			var s testSchema
			if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
				t.Fatalf("InputSchema: %v", err)
			}
			if s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf(`schema should set "additionalProperties": false`)
			}
			args := minimalArgs(t, s)
			if err := c.Validate(tool.Name, args); err != nil {
				t.Fatalf("minimal arguments %v refused: %v", args, err)
			}
			withWS := cloneWith(args, "workspace_id", "ws_1")
			if err := c.Validate(tool.Name, withWS); err != nil {
				t.Errorf("workspace_id refused: %v", err)
			}
			extra := cloneWith(args, "bogus_property", "x")
			if err := c.Validate(tool.Name, extra); err == nil || !strings.Contains(err.Error(), "/bogus_property: unknown property") {
				t.Errorf("unknown property: got %v", err)
			}
			for _, r := range s.Required {
				without := cloneWith(args, "", nil)
				delete(without, r)
				err := c.Validate(tool.Name, without)
				if err == nil || !strings.Contains(err.Error(), "/"+r+": missing required property") {
					t.Errorf("without %s: got %v", r, err)
				}
			}
		})
	}
}

type testSchema struct {
	Properties           map[string]testProp `json:"properties"`
	Required             []string            `json:"required"`
	AdditionalProperties *bool               `json:"additionalProperties"`
}

type testProp struct {
	Type      string   `json:"type"`
	Enum      []any    `json:"enum"`
	Format    string   `json:"format"`
	Pattern   string   `json:"pattern"`
	MinLength int      `json:"minLength"`
	Minimum   *float64 `json:"minimum"`
}

// patternExamples gives a value for each pattern a required property uses;
// a new pattern must be added here.
var patternExamples = map[string]string{`\.mdx?$`: "user/how-to/approve-agent-actions.mdx"}

func minimalArgs(t *testing.T, s testSchema) map[string]any {
	t.Helper()
	args := map[string]any{}
	for _, r := range s.Required {
		p, ok := s.Properties[r]
		if !ok {
			t.Fatalf("required property %q is not declared", r)
		}
		args[r] = exampleValue(t, r, p)
	}
	return args
}

func exampleValue(t *testing.T, name string, p testProp) any {
	switch {
	case len(p.Enum) > 0:
		return p.Enum[0]
	case p.Format == "uuid":
		return "3f2a6c1e-8d4b-4b7a-9c55-0e1f2a3b4c5d"
	case p.Pattern != "":
		v, ok := patternExamples[p.Pattern]
		if !ok {
			t.Fatalf("%s: add an example for pattern %q", name, p.Pattern)
		}
		return v
	}
	switch p.Type {
	case "string":
		return strings.Repeat("x", max(p.MinLength, 1))
	case "integer", "number":
		if p.Minimum != nil {
			return *p.Minimum
		}
		return 1.0
	case "boolean":
		return true
	case "object":
		return map[string]any{}
	}
	t.Fatalf("%s: no example for type %q", name, p.Type)
	return nil
}

// cloneWith copies m and sets key (when not "") to v.
func cloneWith(m map[string]any, key string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, x := range m {
		out[k] = x
	}
	if key != "" {
		out[key] = v
	}
	return out
}

func TestLookup(t *testing.T) {
	c := mustLoad(t)
	tool, ok := c.Lookup("run.events")
	if !ok || tool.Name != "run.events" || tool.Tier != gateway.TierRead || !tool.External {
		t.Errorf("Lookup(run.events) = %+v, %v", tool, ok)
	}
	if !json.Valid(tool.InputSchema) {
		t.Errorf("InputSchema is not valid JSON")
	}
	for _, name := range []string{"", "run.event", "RUN.EVENTS", "supacloud.run.events"} {
		if _, ok := c.Lookup(name); ok {
			t.Errorf("Lookup(%q) found a tool", name)
		}
	}
}

func TestToolsReturnsACopy(t *testing.T) {
	c := mustLoad(t)
	ts := c.Tools()
	ts[0].Name = "changed"
	ts[0].Tier = gateway.TierDeploy
	if got := c.Tools()[0]; got.Name != "delegate_subtask" || got.Tier != gateway.TierBaseline {
		t.Errorf("catalog changed through Tools(): %+v", got)
	}
}

// catalogJSON builds a one-tool catalog from an entry fragment.
func catalogJSON(entries ...string) []byte {
	return []byte(`{"tools": [` + strings.Join(entries, ",") + `]}`)
}

const okSchema = `{"type":"object","properties":{"x":{"type":"string"},"workspace_id":{"type":"string"}},"additionalProperties":false}`

func entryJSON(name, tier, extra, schema string) string {
	return fmt.Sprintf(`{"name":%q,"tier":%q,"description":"d"%s,"input_schema":%s}`, name, tier, extra, schema)
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		note string
		data []byte
		want string // substring of the error message
	}{
		{"not JSON", []byte(`{"tools": [`), "not valid catalog JSON"},
		{"trailing data", append(catalogJSON(entryJSON("a", "read", "", okSchema)), []byte(` {}`)...), "data after"},
		{"unknown top-level field", []byte(`{"tols": []}`), "unknown field"},
		{"unknown entry field", catalogJSON(entryJSON("a", "read", `,"readonly":true`, okSchema)), "unknown field"},
		{"no tools", []byte(`{"tools": []}`), "lists no tools"},
		{"duplicate name", catalogJSON(entryJSON("a.b", "read", "", okSchema), entryJSON("a.b", "ops", "", okSchema)), `"a.b" twice`},
		{"unknown tier", catalogJSON(entryJSON("a.b", "admin", "", okSchema)), `("a.b") is invalid: tier "admin" is unknown`},
		{"empty name", catalogJSON(entryJSON("", "read", "", okSchema)), "name must be"},
		{"name with space", catalogJSON(entryJSON("run list", "read", "", okSchema)), `("run list") is invalid: name must be`},
		{"empty description", catalogJSON(`{"name":"a","tier":"read","description":" ","input_schema":` + okSchema + `}`), "description is empty"},
		{"missing schema", catalogJSON(`{"name":"a","tier":"read","description":"d"}`), `("a") is invalid: input_schema is missing`},
		{"schema not object type", catalogJSON(entryJSON("a", "read", "", `{"type":"string"}`)), `"type": "object"`},
		{"schema does not compile", catalogJSON(entryJSON("a", "read", "", `{"type":"object","properties":{"x":{"type":"strin"}}}`)), `("a") is invalid: input_schema does not compile`},
		{"bad minimum", catalogJSON(entryJSON("a", "read", "", `{"type":"object","properties":{"x":{"minimum":"1"}}}`)), "does not compile"},
		{"bad regexp", catalogJSON(entryJSON("a", "read", "", `{"type":"object","properties":{"x":{"pattern":"("}}}`)), "does not compile"},
		{"external ref", catalogJSON(entryJSON("a", "read", "", `{"type":"object","properties":{"x":{"$ref":"file:///etc/passwd"}}}`)), "does not compile"},
		{"workspace_id required", catalogJSON(entryJSON("a", "read", "", `{"type":"object","properties":{"workspace_id":{"type":"string"}},"required":["workspace_id"]}`)), "must not require workspace_id"},
		{"closed schema without workspace_id", catalogJSON(entryJSON("a", "read", "", `{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`)), "must declare an optional workspace_id"},
		{"workspace_id not string", catalogJSON(entryJSON("a", "read", "", `{"type":"object","properties":{"workspace_id":{"type":"integer"}}}`)), "workspace_id must have"},
		{"carve_out on read", catalogJSON(entryJSON("a", "read", `,"carve_out":true`, okSchema)), "carve_out"},
		{"confirmation on ops", catalogJSON(entryJSON("a", "ops", `,"confirmation":true`, okSchema)), "confirmation"},
		{"external deploy", catalogJSON(entryJSON("a", "deploy", `,"external":true`, okSchema)), "never reachable externally"},
		{"read_only ops", catalogJSON(entryJSON("a", "ops", `,"read_only":true`, okSchema)), "read_only contradicts"},
		{"limit_kind on read", catalogJSON(entryJSON("a", "read", `,"limit_kind":"proposal"`, okSchema)), "limit_kind"},
		{"scaffold without limit_kind", catalogJSON(entryJSON("a", "scaffold", "", okSchema)), "need limit_kind"},
		{"scaffold with unknown limit_kind", catalogJSON(entryJSON("a", "scaffold", `,"limit_kind":"spawn"`, okSchema)), "need limit_kind"},
	}
	for _, tc := range tests {
		t.Run(tc.note, func(t *testing.T) {
			c, err := Parse(tc.data)
			if err == nil {
				t.Fatalf("Parse accepted the catalog (%d tools)", c.Len())
			}
			var ge *gateway.Error
			if !errors.As(err, &ge) || ge.Code != gateway.EInvalid {
				t.Errorf("error %v is not a gateway EInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	data := catalogJSON(
		entryJSON("extra.open", "read", `,"read_only":true,"external":true`, `{"type":"object"}`),
		entryJSON("extra.closed", "scaffold", `,"limit_kind":"task_spawn"`, okSchema),
		entryJSON("extra.defs", "ops", "", `{"type":"object","$defs":{"id":{"type":"string","minLength":1}},"properties":{"id":{"$ref":"#/$defs/id"}},"required":["id"]}`),
	)
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Len() != 3 {
		t.Fatalf("Len() = %d, want 3", c.Len())
	}
	tool, _ := c.Lookup("extra.closed")
	if tool.LimitKind != LimitKindTaskSpawn || tool.Tier != gateway.TierScaffold {
		t.Errorf("extra.closed = %+v", tool)
	}
	if string(tool.InputSchema) != okSchema {
		t.Errorf("InputSchema = %s, want the compacted schema", tool.InputSchema)
	}
	if err := c.Validate("extra.open", map[string]any{"anything": 1.0}); err != nil {
		t.Errorf("open schema refused extra property: %v", err)
	}
	if err := c.Validate("extra.defs", map[string]any{"id": ""}); err == nil || !strings.Contains(err.Error(), "/id: must be at least 1 characters") {
		t.Errorf("$ref into $defs not applied: %v", err)
	}
}

func TestMerge(t *testing.T) {
	base := mustLoad(t)
	extra, err := Parse(catalogJSON(entryJSON("upstream.echo", "read", "", okSchema)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := base.Merge(extra)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if m.Len() != 72 || base.Len() != 71 || extra.Len() != 1 {
		t.Errorf("lengths merged=%d base=%d extra=%d, want 72/71/1", m.Len(), base.Len(), extra.Len())
	}
	ts := m.Tools()
	if ts[0].Name != "delegate_subtask" || ts[71].Name != "upstream.echo" {
		t.Errorf("merged order: first %q, last %q", ts[0].Name, ts[71].Name)
	}
	if err := m.Validate("upstream.echo", map[string]any{"x": 1.0}); err == nil {
		t.Errorf("merged catalog did not validate the extra tool's arguments")
	}
	if err := m.Validate("project.get", map[string]any{"project_id": "p1"}); err != nil {
		t.Errorf("merged catalog lost the base tool: %v", err)
	}
	if _, ok := base.Lookup("upstream.echo"); ok {
		t.Errorf("Merge changed the base catalog")
	}

	dup, _ := Parse(catalogJSON(entryJSON("project.get", "read", "", okSchema)))
	_, err = base.Merge(dup)
	if err == nil || gateway.ErrorCodeOf(err) != gateway.EInvalid || !strings.Contains(err.Error(), `both define "project.get"`) {
		t.Errorf("duplicate merge: got %v", err)
	}
	if base.Len() != 71 {
		t.Errorf("failed Merge changed the base catalog: Len() = %d", base.Len())
	}
}

// requiredArgs is each tool's required arguments, read from the seed's
// descriptions; tools not listed take no required argument.
var requiredArgs = map[string][]string{
	"delegate_subtask":                 {"agent_profile_id", "prompt"},
	"get_subtask_result":               {"subtask_id"},
	"cancel_subtask":                   {"subtask_id"},
	"memory.search":                    {"query"},
	"memory.get":                       {"memory_id"},
	"memory.propose_review":            {"action"},
	"project.get":                      {"project_id"},
	"tasks.get":                        {"task_id"},
	"app.get":                          {"app_id"},
	"workflow.get":                     {"workflow_id"},
	"app.migration.list":               {"app_id"},
	"run.get":                          {"run_id"},
	"run.events":                       {"run_id"},
	"backlog.get":                      {"backlog_item_id"},
	"app.files.list":                   {"app_id"},
	"app.files.get":                    {"app_id", "path"},
	"script.get":                       {"slug"},
	"app.builds.list":                  {"app_id"},
	"issue.get":                        {"issue_id"},
	"conversation.get":                 {"resource", "conversation_id"},
	"conversation.list":                {"resource"},
	"docs.search":                      {"query"},
	"docs.get":                         {"path"},
	"spec.get":                         {"name"},
	"workflow.trigger":                 {"workflow_id"},
	"schedule.create":                  {"name", "workflow_id", "cron"},
	"schedule.update":                  {"schedule_id"},
	"schedule.pause":                   {"schedule_id"},
	"schedule.resume":                  {"schedule_id"},
	"repo_sync.trigger":                {"project_id", "direction"},
	"issue.comment":                    {"issue_id", "body"},
	"issue.transition":                 {"issue_id", "state"},
	"pr.create":                        {"title", "head"},
	"conversation.reply":               {"resource", "conversation_id", "body"},
	"conversation.assign":              {"resource", "conversation_id", "assignee_id"},
	"conversation.resolve":             {"resource", "conversation_id"},
	"conversation.handoff":             {"resource", "conversation_id", "team_id"},
	"task.create":                      {"project_id", "prompt"},
	"task.cancel":                      {"task_id"},
	"task.intervene":                   {"task_id", "message"},
	"approval.decide":                  {"approval_id", "decision"},
	"run.rerun_node":                   {"run_id", "node_id"},
	"permission.grant":                 {"tool", "scope"},
	"permission.revoke":                {"permission_id"},
	"script.run":                       {"slug"},
	"scaffold.script.propose":          {"slug", "source"},
	"scaffold.app.propose":             {"name"},
	"scaffold.app.file_upsert.propose": {"app_id", "path", "content"},
	"scaffold.workflow.propose":        {"name", "definition"},
	"task.create_for_app_scaffold":     {"app_id", "prompt"},
	"task.create_for_script_scaffold":  {"slug", "prompt"},
	"app.deploy":                       {"app_id"},
	"app.undeploy":                     {"app_id"},
	"app.pause":                        {"app_id"},
	"app.resume":                       {"app_id"},
	"app.migration.apply":              {"app_id"},
}

func TestRequiredArguments(t *testing.T) {
	c := mustLoad(t)
	for _, tool := range c.Tools() {
		var s testSchema
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		got := slices.Sorted(slices.Values(s.Required))
		want := slices.Sorted(slices.Values(requiredArgs[tool.Name]))
		if !slices.Equal(got, want) {
			t.Errorf("%s requires %v, want %v", tool.Name, got, want)
		}
	}
}
