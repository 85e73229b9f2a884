package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// ccSeedGroups lists every tool of docs/requirements.md#cc-registry by group, in its order,
// typed from the seed so that a typo in ccserver/catalog.json fails.
var ccSeedGroups = []struct {
	group string
	names []string
}{
	{"tool_search", []string{"search_tool_bm25", "list_my_tools"}},
	{"agents", []string{"list_agents"}},
	{"messaging_delegation", []string{"send_to_agent", "ask_agent", "delegate_task", "consult_agent", "todo_read"}},
	{"skills", []string{"list_skills", "create_skill", "install_skill", "update_skill", "list_skill_updates", "verify_skills", "pin_skill"}},
	{"plans_playbooks_artifacts", []string{"submit_plan", "create_playbook", "run_playbook", "publish_artifact", "revise_artifact", "list_artifacts", "get_artifact", "complete_goal"}},
	{"workspaces", []string{"list_workspaces"}},
	{"repos", []string{"list_repos"}},
	{"messages", []string{"list_spaces", "get_messages", "send_message", "get_space_notes", "update_space_notes", "todo_write"}},
	{"review", []string{"start_ai_review", "add_review_node", "confirm_review_node", "resolve_review_node", "dismiss_review_node", "request_peer_review", "dispatch_reviewers", "submit_reviewer_verdict", "finalize_review", "set_cohort_summary", "add_review_diagram", "publish_review_to_github"}},
	{"memory", []string{"search_memory", "propose_fact", "supersede_fact", "propose_policy", "supersede_policy", "list_policies", "list_memory_domains", "record_observation", "get_my_notes", "update_my_notes", "remember", "consolidate_memory", "harmonize_memory", "list_memory_conflicts"}},
	{"governance", []string{"create_goal", "list_goals", "update_goal_progress", "create_approval", "list_approvals", "decide_approval", "comment_approval", "exit_plan_mode", "agent_heartbeat", "list_runtime_health", "list_agent_presence", "get_org_chart", "create_work_product", "save_work_product_revision", "list_work_products", "get_work_product", "create_runtime_profile", "list_runtime_profiles"}},
	{"code_graph", []string{"search_code", "code_symbol", "code_callers", "code_callees", "code_impact"}},
	{"tickets", []string{"create_ticket", "get_ticket", "list_tickets", "update_ticket", "assign_ticket", "reassign_ticket", "add_ticket_collaborator", "comment_on_ticket", "close_ticket", "fail_ticket", "delegate_ticket", "ticket_pr_link", "ticket_relation", "list_ticket_relations"}},
	{"team_pipeline", []string{"record_team_activity", "preview_trigger", "submit_output"}},
	{"orchestration", []string{"propose_orchestration"}},
	{"newsfeed", []string{"list_feeds", "list_articles", "get_article", "set_article_read", "set_article_saved", "refresh_feeds"}},
	{"rigs", []string{"computer_use", "browser_use", "mobile_use", "ios_use", "rig_list", "rig_close"}},
}

// ccApproval are the tools docs/requirements.md#cc-approval says declare requiresApproval.
var ccApproval = []string{
	"create_ticket", "update_ticket", "assign_ticket", "reassign_ticket", "close_ticket", "ticket_relation",
	"create_goal", "update_goal_progress", "create_approval", "decide_approval", "comment_approval",
	"create_work_product", "save_work_product_revision", "create_runtime_profile", "install_skill", "update_skill",
}

// ccActionClasses are the action classes docs/requirements.md#cc-action-classes declares.
var ccActionClasses = map[string][]string{
	"computer_use": {ActionEnclosureControl, ActionNetworkEgress, ActionProcessSpawn},
	"browser_use":  {ActionEnclosureControl, ActionNetworkEgress, ActionProcessSpawn},
	"mobile_use":   {ActionEnclosureControl, ActionNetworkEgress, ActionPackageInstall, ActionProcessSpawn},
	"ios_use":      {ActionEnclosureControl, ActionNetworkEgress, ActionPackageInstall, ActionProcessSpawn},
	"rig_close":    {ActionEnclosureControl},
}

// ccGlobal take no workspace_id; ccOptional take it optionally
// (docs/requirements.md#cc-workspace-id).
var (
	ccGlobal   = []string{"list_workspaces", "list_feeds", "list_articles", "get_article", "set_article_read", "set_article_saved", "refresh_feeds"}
	ccOptional = []string{"search_tool_bm25", "list_my_tools"}
)

func mustLoadCC(t testing.TB) *Catalog {
	t.Helper()
	c, err := LoadCCServer()
	if err != nil {
		t.Fatalf("LoadCCServer: %v", err)
	}
	return c
}

func TestCCServerNamesGroupsAndOrderMatchSeed(t *testing.T) {
	c := mustLoadCC(t)
	if c.Len() != 110 {
		t.Fatalf("cc_server catalog has %d tools, docs/requirements.md#cc-registry registers 110", c.Len())
	}
	tools := c.Tools()
	i := 0
	for _, g := range ccSeedGroups {
		for _, n := range g.names {
			if i >= len(tools) {
				t.Fatalf("catalog ends before %s", n)
			}
			if tools[i].Name != n || tools[i].Group != g.group {
				t.Errorf("Tools()[%d] = %s (%s), want %s (%s) in seed order", i, tools[i].Name, tools[i].Group, n, g.group)
			}
			if tools[i].Tier != "" {
				t.Errorf("%s has tier %q; cc_server tools have groups, not tiers", n, tools[i].Tier)
			}
			i++
		}
	}
	if i != 110 {
		t.Errorf("the seed lists %d tools in this test, want 110", i)
	}
}

func TestCCServerFlags(t *testing.T) {
	c := mustLoadCC(t)
	for _, tool := range c.Tools() {
		if got, want := tool.RequiresApproval, slices.Contains(ccApproval, tool.Name); got != want {
			t.Errorf("%s: requires_approval %v, want %v", tool.Name, got, want)
		}
		if got, want := tool.ActionClasses, ccActionClasses[tool.Name]; !slices.Equal(got, want) {
			t.Errorf("%s: action classes %v, want %v", tool.Name, got, want)
		}
		if tool.CarveOut || tool.Confirmation || tool.External || tool.LimitKind != "" {
			t.Errorf("%s carries a SupaCloud tier flag", tool.Name)
		}
	}
	if rl, _ := c.Lookup("rig_list"); rl == nil || rl.ActionClasses != nil || !rl.ReadOnly {
		t.Errorf("rig_list must declare no action class and only read: %+v", rl)
	}
}

// TestCCServerWorkspaceID: required on every workspace-scoped tool, absent
// on the global ones, optional on the search tools, and the same string
// schema everywhere it is declared.
func TestCCServerWorkspaceID(t *testing.T) {
	c := mustLoadCC(t)
	var first json.RawMessage
	for _, tool := range c.Tools() {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		ws, declared := s.Properties["workspace_id"]
		required := slices.Contains(s.Required, "workspace_id")
		switch {
		case slices.Contains(ccGlobal, tool.Name):
			if declared {
				t.Errorf("%s is global and must not take workspace_id", tool.Name)
			}
		case slices.Contains(ccOptional, tool.Name):
			if !declared || required {
				t.Errorf("%s must take workspace_id optionally (declared %v, required %v)", tool.Name, declared, required)
			}
		default:
			if !declared || !required {
				t.Errorf("%s is workspace-scoped and must require workspace_id (declared %v, required %v)", tool.Name, declared, required)
			}
			if first == nil {
				first = ws
			} else if string(ws) != string(first) {
				t.Errorf("%s declares workspace_id as %s, others as %s", tool.Name, ws, first)
			}
		}
	}
}

// TestCCServerNamesWithoutTool: the capabilities docs/requirements.md#cc-unknown-tools says have no
// tool are not in the catalog, under these or similar names.
func TestCCServerNamesWithoutTool(t *testing.T) {
	c := mustLoadCC(t)
	for _, n := range []string{"hire_agent", "fire_agent", "update_agent", "doctor", "workspace.upsert", "ask_user", "search_tools", "meeting_summary"} {
		if _, ok := c.Lookup(n); ok {
			t.Errorf("%s is in the catalog; docs/requirements.md#cc-unknown-tools says it has no tool", n)
		}
	}
	for _, tool := range c.Tools() {
		for _, word := range []string{"project", "calendar", "meeting"} {
			if strings.Contains(tool.Name, word) {
				t.Errorf("%s looks like a %s tool; docs/requirements.md#cc-unknown-tools says there are none", tool.Name, word)
			}
		}
	}
}

// TestCCServerExampleArguments: the minimal arguments of every tool are
// valid, dropping a required one or adding an unknown one is refused.
func TestCCServerExampleArguments(t *testing.T) {
	c := mustLoadCC(t)
	for _, tool := range c.Tools() {
		args, ok := c.ExampleArguments(tool.Name)
		if !ok {
			t.Fatalf("%s: no example", tool.Name)
		}
		if err := c.Validate(tool.Name, args); err != nil {
			t.Errorf("%s: example %v refused: %v", tool.Name, args, err)
		}
		if err := c.Validate(tool.Name, cloneWith(args, "bogus_property", "x")); err == nil {
			t.Errorf("%s: an unknown property is accepted", tool.Name)
		}
		for k := range args {
			without := cloneWith(args, "", nil)
			delete(without, k)
			if err := c.Validate(tool.Name, without); err == nil {
				t.Errorf("%s: accepted without required %s", tool.Name, k)
			}
		}
	}
	if _, ok := c.ExampleArguments("hire_agent"); ok {
		t.Error("ExampleArguments answers for a tool the catalog does not hold")
	}
}

func TestParseGroupedCatalogRejects(t *testing.T) {
	const schema = `{"type":"object","properties":{"workspace_id":{"type":"string"}},"required":["workspace_id"],"additionalProperties":false}`
	entry := func(fields string) string {
		return `{"name":"a","description":"d","input_schema":` + schema + `,` + fields + `}`
	}
	cases := []struct{ name, data, want string }{
		{"bad group", `{"tools":[` + entry(`"group":"Tickets"`) + `]}`, "group \"Tickets\""},
		{"tier and group", `{"tools":[` + entry(`"group":"tickets","tier":"read"`) + `]}`, "not both"},
		{"tier flag", `{"tools":[` + entry(`"group":"tickets","external":true`) + `]}`, "SupaCloud tier flags"},
		{"unknown action class", `{"tools":[` + entry(`"group":"rigs","action_classes":["fileWrite"]`) + `]}`, `action class "fileWrite" is unknown`},
		{"action class twice", `{"tools":[` + entry(`"group":"rigs","action_classes":["processSpawn","processSpawn"]`) + `]}`, "listed twice"},
		{"approval on a tiered entry", `{"tools":[` + entry(`"tier":"read","requires_approval":true`) + `]}`, "belong to grouped"},
		{"mixed catalog", `{"tools":[` + entry(`"group":"tickets"`) + `,{"name":"b","tier":"read","description":"d","input_schema":{"type":"object"}}]}`, "mixes a tiered and a grouped"},
		{"workspace_id not a string", `{"tools":[{"name":"a","group":"g","description":"d","input_schema":{"type":"object","properties":{"workspace_id":{"type":"integer"}}}}]}`, "workspace_id must have"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A grouped entry may require workspace_id, or leave it out of a closed schema.
	ok := `{"tools":[` + entry(`"group":"tickets","requires_approval":true`) + `,{"name":"g","group":"workspaces","description":"d","input_schema":{"type":"object","additionalProperties":false}}]}`
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("grouped catalog refused: %v", err)
	}
}
