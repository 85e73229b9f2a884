# What an upstream may send to the caller during an allowed tools/call, and
# what the gateway refuses to relay (docs/architecture.md, Relayed upstream
# messages). The gateway asks for relay in the decision's obligations: the
# kinds relayed to this caller and the words that mark a form elicitation
# as asking for a secret.
package supacloud

# relay_rules: per principal kind, the upstream-initiated kinds relayed
# during a call the caller may make (progress and log notifications,
# elicitation/create, sampling/createMessage, roots/list). Both kinds of
# caller get every kind by default; remove a kind here to stop relaying it.
# secret_words: a form elicitation whose requestedSchema has a property
# whose name, title, description or format contains one of them (compared
# on letters and digits only, lowercased, after NFKC; whatever the
# request's mode) is refused, so an upstream cannot make the client's
# user type a credential into a form the gateway relays.
relay_rules := {
	"kinds": {
		"agent": ["progress", "log", "elicitation", "sampling", "roots"],
		"coordinator": ["progress", "log", "elicitation", "sampling", "roots"],
	},
	"secret_words": ["password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey", "credential", "otp"],
}

# relay_kinds: the kinds relayed to this caller, sorted; none for a
# principal kind the rules do not name.
default relay_kinds := []

relay_kinds := sort(relay_rules.kinds[input.principal.kind])

# relay is the decision's relay obligation of an allowed call.
relay := {
	"kinds": relay_kinds,
	"secret_words": relay_rules.secret_words,
}
