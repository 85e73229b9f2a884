# Per-principal limits of the cc_server surface, read each time the gateway
# loads a revision of the bundle (data.ccserver.limits). calls_per_minute caps the
# tools/call of one principal (its subject, and its pinned workspace if any)
# per UTC minute; MCPGATE_CCSERVER_CALLS_PER_MINUTE overrides it. 120 is two
# calls a second on average: far above an agent's pace, low enough to stop
# a runaway loop. docs/requirements.md#cc-registry names no limit of its own.
package ccserver

limits := {"calls_per_minute": 120}
