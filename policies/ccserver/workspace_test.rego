package ccserver_test

import data.ccserver

tck := {"ticket_id": "TCK-1"}

test_missing_workspace_id if {
	d := ccserver.decision with input as call(user, t_get_ticket, tck)
	not d.allow
	d.visible
	codes(d) == {"workspace_id.missing"}
	contains(d.reasons[0].message, "ws-acme, ws-globex")
}

test_invalid_workspace_id if {
	some bad in ["", " ws", "ws/acme", 42, "x_________________________________________________________________64"]
	d := ccserver.decision with input as call(user, t_get_ticket, object.union(tck, {"workspace_id": bad}))
	not d.allow
	codes(d) == {"workspace_id.invalid"}
}

test_not_a_member if {
	d := ccserver.decision with input as call(user, t_get_ticket, object.union(tck, {"workspace_id": "ws-initech"}))
	not d.allow
	not d.visible
	codes(d) == {"workspace.not_member"}
	contains(d.reasons[0].message, "u-ada is not a member of workspace ws-initech")
}

test_member_of_either_workspace if {
	every ws in members {
		d := ccserver.decision with input as call(user, t_get_ticket, object.union(tck, {"workspace_id": ws}))
		d.allow
		d.workspace_id == ws
	}
}

test_pinned_agent_stays_in_its_workspace if {
	ok := ccserver.decision with input as call(agent, t_get_ticket, object.union(tck, acme))
	ok.allow
	d := ccserver.decision with input as call(agent, t_get_ticket, object.union(tck, {"workspace_id": "ws-globex"}))
	not d.allow
	codes(d) == {"workspace.foreign"}
	contains(d.reasons[0].message, "started in workspace ws-acme")
}

test_pinned_agent_needs_no_membership if {
	d := ccserver.decision with input as {"principal": agent, "tool": t_get_ticket, "arguments": object.union(tck, acme)}
	d.allow
}

test_no_workspace_at_all if {
	d := ccserver.decision with input as {"principal": user, "tool": t_get_ticket, "arguments": tck}
	not d.allow
	not d.visible
	codes(d) == {"workspace.none"}
	d2 := ccserver.decision with input as {"principal": user, "memberships": [1, 2], "tool": t_get_ticket, "arguments": tck}
	codes(d2) == {"workspace.none"}
}

test_foreign_entity_is_refused if {
	d := ccserver.decision with input as object.union(
		call(user, t_get_ticket, object.union(tck, acme)),
		{"resource": {"kind": "ticket", "id": "TCK-1", "workspace_id": "ws-globex"}},
	)
	not d.allow
	d.visible
	codes(d) == {"workspace.mismatch"}
	contains(d.reasons[0].message, "ticket TCK-1 belongs to workspace ws-globex")
}

test_entity_in_the_named_workspace if {
	d := ccserver.decision with input as object.union(
		call(user, t_get_ticket, object.union(tck, acme)),
		{"resource": {"kind": "ticket", "id": "TCK-1", "workspace_id": "ws-acme"}},
	)
	d.allow
}

test_global_tools_take_no_workspace if {
	every t in [t_list_workspaces, t_get_article] {
		d := ccserver.decision with input as {"principal": user, "tool": t, "arguments": {"article_id": "a-1"}}
		d.allow
		d.workspace_id == ""
	}

	# A workspace_id on a global tool is not read (the schema refuses it).
	d := ccserver.decision with input as call(user, t_list_workspaces, {"workspace_id": "ws-initech"})
	d.allow
}

test_search_tools_take_it_optionally if {
	without := ccserver.decision with input as {"principal": user, "tool": t_search_tools, "arguments": {"query": "ticket"}}
	without.allow
	with_ws := ccserver.decision with input as call(user, t_search_tools, {"query": "ticket", "workspace_id": "ws-acme"})
	with_ws.allow
	with_ws.workspace_id == "ws-acme"
	foreign := ccserver.decision with input as call(user, t_search_tools, {"query": "ticket", "workspace_id": "ws-initech"})
	codes(foreign) == {"workspace.not_member"}
	bad := ccserver.decision with input as call(user, t_search_tools, {"query": "ticket", "workspace_id": "../x"})
	codes(bad) == {"workspace_id.invalid"}
}
