# The cc_server mode policy (ModeToolPolicy,
# docs/requirements.md#cc-modes) and the other data the rules read, as Rego so that it lands
# at data.ccserver whichever folder OPA loads (policies/ or
# policies/ccserver). docs/requirements.md#cc-modes states the rule behind each list.
package ccserver

# modes are the conversation modes a credential may carry (JWT claim mode);
# a credential without one is in default_mode.
modes := {"chat", "plan", "review", "orchestrate"}

default_mode := "chat"

# read_only_modes refuse every tool that declares an action class: none of
# them may change the machine the run lives on (plan: no worktree writes;
# review: read-only context; orchestrate: research and reads, the real work
# runs after the approval). chat is the only mode that may act.
read_only_modes := {"plan", "review", "orchestrate"}

# principal_kinds: a person's client ("user") or an agent the server started
# ("agent"); the pinned workspace comes from the workspace_id claim, not the kind.
principal_kinds := {"user", "agent"}

# always_allowed are the three sets docs/requirements.md#cc-always-allowed allows in every mode,
# regardless of the mode's allowlist.
always_allowed := {
	"memory_and_artifacts": {
		"search_memory", "propose_fact", "propose_policy", "supersede_fact", "supersede_policy",
		"record_observation", "update_my_notes", "get_my_notes", "list_memory_domains", "list_policies",
		"publish_artifact", "revise_artifact", "list_artifacts", "get_artifact",
	},
	"code_graph": {"search_code", "code_symbol", "code_callers", "code_callees", "code_impact"},
	"run_mechanics": {"search_tool_bm25", "list_my_tools", "todo_write", "todo_read"},
}

# read_context are the tools that only read the workspace's state: the
# "read-only context lookups" of review, the "research and read tools" of
# orchestrate, and the context a plan is made from.
read_context := {
	"list_agents", "todo_read", "list_skills", "list_skill_updates", "verify_skills",
	"list_artifacts", "get_artifact", "list_workspaces", "list_repos",
	"list_spaces", "get_messages", "get_space_notes",
	"search_memory", "list_policies", "list_memory_domains", "get_my_notes", "list_memory_conflicts",
	"list_goals", "list_approvals", "list_runtime_health", "list_agent_presence", "get_org_chart",
	"list_work_products", "get_work_product", "list_runtime_profiles",
	"search_code", "code_symbol", "code_callers", "code_callees", "code_impact",
	"get_ticket", "list_tickets", "list_ticket_relations", "preview_trigger",
	"list_feeds", "list_articles", "get_article", "rig_list",
}

# memory_tools are every tool of the memory group: plan mode allows
# "Gedächtnis" as a whole, the maintenance runs included.
memory_tools := {
	"search_memory", "propose_fact", "supersede_fact", "propose_policy", "supersede_policy",
	"list_policies", "list_memory_domains", "record_observation", "get_my_notes", "update_my_notes",
	"remember", "consolidate_memory", "harmonize_memory", "list_memory_conflicts",
}

artifact_tools := {"publish_artifact", "revise_artifact", "list_artifacts", "get_artifact"}

# ticket_verbs is the full set of typed ticket tools (review mode).
ticket_verbs := {
	"create_ticket", "get_ticket", "list_tickets", "update_ticket", "assign_ticket", "reassign_ticket",
	"add_ticket_collaborator", "comment_on_ticket", "close_ticket", "fail_ticket", "delegate_ticket",
	"ticket_pr_link", "ticket_relation", "list_ticket_relations",
}

review_collaboration := {
	"start_ai_review", "add_review_node", "confirm_review_node", "resolve_review_node",
	"dismiss_review_node", "request_peer_review", "dispatch_reviewers", "submit_reviewer_verdict",
	"finalize_review", "set_cohort_summary", "add_review_diagram", "publish_review_to_github",
}

# communication: messages to agents and spaces, and the space's handoff notes.
communication := {"send_to_agent", "ask_agent", "send_message", "update_space_notes"}

# mode_tool_policy is ModeToolPolicy. all: every registered tool (chat).
# tools: the curated allowlist. own_ticket_tools: tools allowed only on the
# run's own ticket (principal.ticket_id = arguments.ticket_id): plan's
# closing verbs.
mode_tool_policy := {
	"chat": {"all": true, "tools": set(), "own_ticket_tools": set()},
	"plan": {
		"all": false,
		"tools": (((read_context | memory_tools) | artifact_tools) | {"todo_read", "todo_write", "submit_plan", "exit_plan_mode"}),
		"own_ticket_tools": {"close_ticket", "fail_ticket"},
	},
	"review": {
		"all": false,
		"tools": (((read_context | review_collaboration) | communication) | ticket_verbs),
		"own_ticket_tools": set(),
	},
	"orchestrate": {
		"all": false,
		"tools": (read_context | {"propose_orchestration", "create_playbook", "run_playbook"}),
		"own_ticket_tools": set(),
	},
}

# workspace holds the workspace_id rules' data
# (docs/requirements.md#cc-workspace-id): the truly global tools take none, the search tools take it
# optionally, every other tool requires it; a valid id matches id_pattern
# (the catalog's workspace_id schema uses the same pattern).
workspace := {
	"global_tools": {"list_workspaces", "list_feeds", "list_articles", "get_article", "set_article_read", "set_article_saved", "refresh_feeds"},
	"optional_tools": {"search_tool_bm25", "list_my_tools"},
	"id_pattern": `^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`,
}

# guard_decisions are the verdicts of cc_server's action guard for a tool
# with a non-empty action class: allow runs it, prompt needs a person's
# approval first, deny refuses it.
guard_decisions := {"allow", "prompt", "deny"}
