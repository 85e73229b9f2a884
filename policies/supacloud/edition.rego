# Gate 1, the deployment edition (docs/requirements.md#edition):
# a process-global, fail-closed property. Any value other than the editions
# listed in data.supacloud.grants.editions denies every tool.
package supacloud

# edition_valid holds when input.edition is one data.supacloud.grants.editions
# accepts ("community" or "enterprise").
edition_valid if input.edition in data.supacloud.grants.editions

# enterprise_edition holds only on an enterprise instance; every
# enterprise-only feature (seat types, permission keys) needs it.
enterprise_edition if input.edition == "enterprise"

# edition_text is input.edition as JSON for messages, "(unset)" when absent.
default edition_text := "(unset)"

edition_text := json.marshal(input.edition)

deny contains {"code": "edition.invalid", "message": msg} if {
	not edition_valid
	msg := sprintf(
		"deployment edition %s is not valid, so every tool is denied; set SUPACLOUD_EDITION to %s and restart mcpgate",
		[edition_text, concat(" or ", data.supacloud.grants.editions)],
	)
}
