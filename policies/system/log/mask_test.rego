package system.log_test

import data.system.log

jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"

api_token := "scmt_3q2+7w8xk1AbCdEfGhIjKlMnOpQrStUv"

confirmation_token := "mcpc1.eyJ0IjoiYXBwLmRlcGxveSJ9.bWFj"

# event is a decision log event as the gateway hands it to the mask: the
# policy input of a script.run call and its decision.
event(arguments, message) := {
	"decision_id": "d1",
	"path": "supacloud/decision",
	"input": {
		"principal": {"kind": "agent", "sub": "alice", "workspace_id": "ws-1", "task_id": "t1", "scopes": []},
		"tool": {"name": "script.run", "tier": "ops", "carve_out": true},
		"arguments": arguments,
	},
	"result": {
		"allow": false, "visible": true, "tier": "ops",
		"reasons": [{"code": "script.not_granted", "message": message}],
	},
}

test_arguments_are_erased_by_default if {
	m := log.mask with input as event({"slug": "nightly-backup"}, "no")
	m == {"/input/arguments/slug"}
}

test_no_arguments_nothing_to_mask if {
	m := log.mask with input as event({}, "tool script.run needs supacloud.script.run")
	m == set()
}

test_opted_in_argument_is_kept if {
	m := log.mask with input as event({"slug": "nightly-backup"}, "no")
		with log.arguments as {"script.run": ["slug"]}
	m == set()
}

test_opted_in_for_every_tool if {
	m := log.mask with input as event({"slug": "nightly-backup", "other": 1}, "no")
		with log.arguments as {"*": ["slug"]}
	m == {"/input/arguments/other"}
}

test_opted_in_for_another_tool_only if {
	m := log.mask with input as event({"slug": "nightly-backup"}, "no")
		with log.arguments as {"app.deploy": ["slug"]}
	m == {"/input/arguments/slug"}
}

test_secret_named_argument_is_erased_even_when_opted_in if {
	m := log.mask with input as event({"confirmation_token": "x", "api_key": "k"}, "no")
		with log.arguments as {"*": ["confirmation_token", "api_key"]}
	m == {"/input/arguments/confirmation_token", "/input/arguments/api_key"}
}

test_credentials_in_an_opted_in_argument_are_masked if {
	every token in [jwt, api_token, confirmation_token] {
		m := log.mask with input as event({"slug": sprintf("run %s now", [token])}, "no")
			with log.arguments as {"script.run": ["slug"]}
		m == {{"op": "upsert", "path": "/input/arguments/slug", "value": "run [masked] now"}}
	}
}

test_credentials_anywhere_in_the_input_are_masked if {
	ev := json.patch(event({}, "no"), [
		{"op": "add", "path": "/input/principal/sub", "value": api_token},
		{"op": "add", "path": "/input/principal/scopes", "value": ["mcp:read", jwt]},
	])
	m := log.mask with input as ev
	m == {
		{"op": "upsert", "path": "/input/principal/sub", "value": "[masked]"},
		{"op": "upsert", "path": "/input/principal/scopes/1", "value": "[masked]"},
	}
}

test_values_under_secret_keys_are_masked if {
	ev := json.patch(event({}, "no"), [{"op": "add", "path": "/input/resource", "value": {"kind": "approval", "session_secret": "hunter2"}}])
	m := log.mask with input as ev
	m == {{"op": "upsert", "path": "/input/resource/session_secret", "value": "[masked]"}}
}

test_reason_quoting_an_erased_argument_is_masked if {
	m := log.mask with input as event({"slug": "nightly-backup"}, `script "nightly-backup" is not in the profile's script_allowlist`)
	m == {
		"/input/arguments/slug",
		{"op": "upsert", "path": "/result/reasons/0/message", "value": "script [masked] is not in the profile's script_allowlist"},
	}
}

test_reason_quoting_a_short_erased_argument_only_quoted if {
	m := log.mask with input as event({"slug": "ab"}, `script "ab" is absent; about`)
	m == {
		"/input/arguments/slug",
		{"op": "upsert", "path": "/result/reasons/0/message", "value": "script [masked] is absent; about"},
	}
}

# A reason may quote an erased argument that is no string (sprintf %v of
# an object, an array or a number): the values inside it are masked too.
test_reason_quoting_values_inside_an_erased_argument_is_masked if {
	arg := {"nested": {"pw": "hunter2-value"}, "list": ["card", 4111111111111111]}
	m := log.mask with input as event({"workspace_id": arg}, sprintf("workspace_id %v is not a workspace id", [arg]))
	some op in m
	op.path == "/result/reasons/0/message"
	not contains(op.value, "hunter2")
	not contains(op.value, "4111111111111111")
	not contains(op.value, "card")
}

test_reason_quoting_an_erased_number_is_masked if {
	m := log.mask with input as event({"amount": 123456789}, "amount 123456789 is over the limit")
	m == {
		"/input/arguments/amount",
		{"op": "upsert", "path": "/result/reasons/0/message", "value": "amount [masked] is over the limit"},
	}
}

test_credentials_in_a_reason_are_masked if {
	m := log.mask with input as event({}, sprintf("token %s refused", [jwt]))
	m == {{"op": "upsert", "path": "/result/reasons/0/message", "value": "token [masked] refused"}}
}

test_a_credential_in_an_erased_argument_is_erased_not_upserted if {
	m := log.mask with input as event({"slug": jwt}, "no")
	m == {"/input/arguments/slug"}
}

test_keys_are_escaped_in_pointers if {
	log.pointer("input", ["a/b", "c%d", 3]) == "/input/a%2Fb/c%25d/3"
}
