# Masks mcpgate's decision log events the way OPA's decision log plugin
# masks its own: the gateway evaluates data.system.log.mask once per event,
# with the event as input (input.input is the policy input as evaluated,
# input.result the decision), and applies what it yields:
#   - a JSON pointer string such as "/input/arguments/slug": erase it;
#   - {"op": "upsert", "path": "/input/...", "value": v}: replace it.
# Erased and replaced paths are listed in the event's "erased" and
# "masked". A mask that fails drops the event: it is never logged unmasked.
#
# What leaves the gateway by default: no argument value but those listed
# in data.system.log.arguments (arguments.rego), no value under a key that
# names a secret, and no agent session JWT, scmt_ API token or deploy
# confirmation token wherever it appears, in the input or in the reasons.
#
# Only refs below input.input and input.result are used here: the gateway
# reads the refs to input of every module to know which call arguments the
# decision can read, and a bare input would make it pass them all.
package system.log

# placeholder replaces a secret in a string.
placeholder := "[masked]"

mask contains pointer("input", ["arguments", name]) if {
	some name, _ in input.input.arguments
	not logged_argument(name)
}

mask contains {"op": "upsert", "path": pointer("input", path), "value": clean} if {
	walk(input.input, [path, value])
	is_string(value)
	not under_erased_argument(path)
	clean := scrub_value(path, value)
	clean != value
}

mask contains {"op": "upsert", "path": pointer("result", path), "value": clean} if {
	walk(input.result, [path, value])
	is_string(value)
	clean := scrub(redact_arguments(value))
	clean != value
}

# logged_argument: the operator opted the argument in for this tool (or for
# every tool, "*"), and its name does not name a secret.
logged_argument(name) if {
	some tool in [input.input.tool.name, "*"]
	name in arguments[tool]
	not secret_key(name)
}

under_erased_argument(path) if {
	path[0] == "arguments"
	count(path) > 1
	not logged_argument(path[1])
}

# secret_key: an object key whose value is never logged.
secret_key(key) if {
	is_string(key)
	regex.match(`(?i)(token|secret|passw|api[_-]?key|authorization|credential|cookie|private[_-]?key|jwt)`, key)
}

# scrub_value is a string of the input as it may be logged: wholly masked
# under a secret key, else with every credential in it masked.
scrub_value(path, _) := placeholder if secret_key(path[count(path) - 1])

scrub_value(path, value) := scrub(value) if not secret_key(path[count(path) - 1])

# The credentials the gateway knows by their form: agent session JWTs
# (a base64url JSON header, so "eyJ"), API tokens of the external gateway
# (docs/requirements.md#api-tokens: scmt_…, up to the next space, quote, comma or semicolon) and
# deploy confirmation tokens (mcpc1.<claims>.<mac>), matched first because
# their claims are base64url JSON too.
credential_patterns := [
	`mcpc1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`,
	`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.?[A-Za-z0-9_-]*`,
	`scmt_[^\s"',;]*`,
]

scrub(s) := regex.replace(regex.replace(regex.replace(s, credential_patterns[0], placeholder), credential_patterns[1], placeholder), credential_patterns[2], placeholder)

# redact_arguments masks, in a text of the decision (a reason message), the
# values of the arguments that are not logged (strings, numbers and keys,
# also those inside an object or array), so that a message
# quoting one does not log it anyway.
redact_arguments(s) := strings.replace_n(erased_values, s)

erased_values[json.marshal(value)] := placeholder if {
	some value in erased_leaves
	is_string(value)
	value != ""
}

erased_values[value] := placeholder if {
	some value in erased_leaves
	is_string(value)
	count(value) >= 4
}

erased_values[text] := placeholder if {
	some value in erased_leaves
	is_number(value)
	text := sprintf("%v", [value])
	count(text) >= 4
}

# erased_leaves: every string and number inside an argument that is not
# logged, and every object key below it, since a reason may quote a whole
# object or array (sprintf %v) as well as a string.
erased_leaves contains leaf if {
	some name, value in input.input.arguments
	not logged_argument(name)
	walk(value, [_, leaf])
	not is_object(leaf)
	not is_array(leaf)
}

erased_leaves contains key if {
	some name, value in input.input.arguments
	not logged_argument(name)
	walk(value, [path, _])
	some key in path
	is_string(key)
}

# pointer is the JSON pointer of path below root, each key percent-escaped
# ("%" and "/"), as the gateway decodes them.
pointer(root, path) := concat("/", array.concat(["", root], [segment(p) | some p in path]))

segment(p) := format_int(p, 10) if is_number(p)

segment(p) := replace(replace(p, "%", "%25"), "/", "%2F") if is_string(p)
