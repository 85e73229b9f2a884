package supacloud_test

import data.supacloud

test_relay_agent_gets_every_kind if {
	supacloud.relay_kinds == ["elicitation", "log", "progress", "roots", "sampling"] with input as {"principal": {"kind": "agent"}}
}

test_relay_unknown_principal_kind_gets_none if {
	supacloud.relay_kinds == [] with input as {"principal": {"kind": "robot"}}
}

test_relay_kinds_follow_the_rules_data if {
	supacloud.relay_kinds == ["progress"] with input as {"principal": {"kind": "coordinator"}}
		with supacloud.relay_rules as {"kinds": {"coordinator": ["progress"]}, "secret_words": []}
}

test_relay_names_secret_words if {
	some w in ["password", "token", "apikey", "secret"]
	w in supacloud.relay.secret_words with input as {"principal": {"kind": "agent"}}
}
