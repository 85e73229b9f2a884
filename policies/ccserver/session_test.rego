package ccserver_test

import data.ccserver

test_user_in_chat_is_allowed if {
	d := ccserver.decision with input as call(user, t_get_ticket, object.union(acme, {"ticket_id": "TCK-1"}))
	d.allow
	d.mode == "chat"
	d.reasons == []
}

test_mode_defaults_to_chat if {
	p := {"kind": "user", "sub": "u-ada"}
	d := ccserver.decision with input as call(p, t_create_ticket, acme)
	d.allow
	d.mode == "chat"
	d2 := ccserver.decision with input as call(object.union(p, {"mode": ""}), t_create_ticket, acme)
	d2.mode == "chat"
}

test_unknown_mode_refuses_everything if {
	d := ccserver.decision with input as call(in_mode("yolo"), t_search_memory, acme)
	not d.allow
	not d.visible
	codes(d) == {"mode.unknown"}
	contains(d.reasons[0].message, "yolo")
	count(ccserver.visible_tools) == 0 with input as {"principal": in_mode("yolo"), "memberships": members, "tools": [t_search_memory]}
}

test_unsupported_principal_alone if {
	some p in [
		{"kind": "coordinator", "sub": "token:x"},
		{"kind": "user", "sub": ""},
		{"kind": "user"},
		{"sub": "u-ada"},
	]
	d := ccserver.decision with input as call(p, t_get_ticket, {})
	not d.allow
	codes(d) == {"principal.unsupported"}
}

test_no_principal_is_refused if {
	d := ccserver.decision with input as {"tool": t_get_ticket}
	codes(d) == {"principal.unsupported"}
	d.mode == "chat"
}
