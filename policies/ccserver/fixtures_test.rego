# Shared inputs of the ccserver tests: a user who is a member of ws-acme and
# ws-globex, a pinned agent, and catalog entries as the gateway sends them.
package ccserver_test

user := {"kind": "user", "sub": "u-ada", "mode": "chat"}

agent := {"kind": "agent", "sub": "u-ada", "mode": "chat", "workspace_id": "ws-acme", "ticket_id": "TCK-7"}

members := ["ws-acme", "ws-globex"]

t_get_ticket := {"name": "get_ticket", "group": "tickets", "requires_approval": false, "action_classes": []}

t_close_ticket := {"name": "close_ticket", "group": "tickets", "requires_approval": true, "action_classes": []}

t_fail_ticket := {"name": "fail_ticket", "group": "tickets", "requires_approval": false, "action_classes": []}

t_create_ticket := {"name": "create_ticket", "group": "tickets", "requires_approval": true, "action_classes": []}

t_assign_ticket := {"name": "assign_ticket", "group": "tickets", "requires_approval": true, "action_classes": []}

t_delegate_ticket := {"name": "delegate_ticket", "group": "tickets", "requires_approval": false, "action_classes": []}

t_search_memory := {"name": "search_memory", "group": "memory", "requires_approval": false, "action_classes": []}

t_remember := {"name": "remember", "group": "memory", "requires_approval": false, "action_classes": []}

t_search_code := {"name": "search_code", "group": "code_graph", "requires_approval": false, "action_classes": []}

t_search_tools := {"name": "search_tool_bm25", "group": "tool_search", "requires_approval": false, "action_classes": []}

t_todo_write := {"name": "todo_write", "group": "messages", "requires_approval": false, "action_classes": []}

t_submit_plan := {"name": "submit_plan", "group": "plans_playbooks_artifacts", "requires_approval": false, "action_classes": []}

t_exit_plan := {"name": "exit_plan_mode", "group": "governance", "requires_approval": false, "action_classes": []}

t_publish_artifact := {"name": "publish_artifact", "group": "plans_playbooks_artifacts", "requires_approval": false, "action_classes": []}

t_send_message := {"name": "send_message", "group": "messages", "requires_approval": false, "action_classes": []}

t_add_review_node := {"name": "add_review_node", "group": "review", "requires_approval": false, "action_classes": []}

t_propose_orch := {"name": "propose_orchestration", "group": "orchestration", "requires_approval": false, "action_classes": []}

t_run_playbook := {"name": "run_playbook", "group": "plans_playbooks_artifacts", "requires_approval": false, "action_classes": []}

t_create_playbook := {"name": "create_playbook", "group": "plans_playbooks_artifacts", "requires_approval": false, "action_classes": []}

t_install_skill := {"name": "install_skill", "group": "skills", "requires_approval": true, "action_classes": []}

t_list_workspaces := {"name": "list_workspaces", "group": "workspaces", "requires_approval": false, "action_classes": []}

t_get_article := {"name": "get_article", "group": "newsfeed", "requires_approval": false, "action_classes": []}

t_browser_use := {"name": "browser_use", "group": "rigs", "requires_approval": false, "action_classes": ["enclosureControl", "networkEgress", "processSpawn"]}

t_rig_close := {"name": "rig_close", "group": "rigs", "requires_approval": false, "action_classes": ["enclosureControl"]}

t_rig_list := {"name": "rig_list", "group": "rigs", "requires_approval": false, "action_classes": []}

# call builds the input of one tools/call.
call(principal, tool, args) := {"principal": principal, "memberships": members, "tool": tool, "arguments": args}

in_mode(m) := object.union(user, {"mode": m})

agent_in_mode(m) := object.union(agent, {"mode": m})

acme := {"workspace_id": "ws-acme"}

codes(d) := {r.code | some r in d.reasons}
