package mcp

import "slices"

// Protocol versions this transport speaks (MCP basic/lifecycle, "Version
// Negotiation"; basic/versioning for 2026-07-28). What each one changes in
// the transport's behaviour is a row of versionTable, not a comparison of
// version strings.
const (
	Version20260728 = "2026-07-28" // the stateless protocol (modern.go)
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
	Version20250326 = "2025-03-26"
	// Version20241105 is the protocol version of the HTTP+SSE transport,
	// spoken only there (see Transport.LegacyHandler).
	Version20241105 = "2024-11-05"
	// LatestVersion is offered to clients that ask initialize for a version
	// not listed.
	LatestVersion = Version20251125
)

// versionInfo is what one protocol version means to the transport: how it
// is reached, and the features that differ between versions.
type versionInfo struct {
	Version string

	// Streamable: served with initialize and a session (Mcp-Session-Id) on
	// Streamable HTTP.
	Streamable bool
	// LegacySSE: accepted by initialize on the HTTP+SSE transport (the
	// 2024-11-05 version it was made for, and the newer ones that clients
	// such as the Go SDK still negotiate over it).
	LegacySSE bool
	// Stateless: served without initialize or session, the version named
	// per request in params._meta and the headers (2026-07-28, modern.go).
	Stateless bool

	// Batching: a Streamable HTTP session accepts JSON-RPC batches
	// (2025-03-26 only: removed in 2025-06-18, never part of 2026-07-28;
	// the HTTP+SSE transport takes them at every version).
	Batching bool
	// InputErrorsAsResults: arguments that fail the tool's input schema
	// are answered as a tool execution error, not -32602 (2025-11-25 on,
	// SEP-1303; ToolError).
	InputErrorsAsResults bool
	// ElicitationModes: elicitation/create names its mode ("mode": "form";
	// MCP 2025-11-25 client/elicitation), so the gateway's own request says
	// it; before, form is the only mode and is not named.
	ElicitationModes bool
	// ParamHeaders: a tools/call carries Mcp-Param-* headers for the
	// x-mcp-header annotations of the tool's schema, checked against its
	// arguments (2026-07-28, wire.CheckParamHeaders).
	ParamHeaders bool
}

// versionTable has one row per version served, newest first.
var versionTable = []versionInfo{
	{Version: Version20260728, Stateless: true, InputErrorsAsResults: true, ElicitationModes: true, ParamHeaders: true},
	{Version: Version20251125, Streamable: true, LegacySSE: true, InputErrorsAsResults: true, ElicitationModes: true},
	{Version: Version20250618, Streamable: true, LegacySSE: true},
	{Version: Version20250326, Streamable: true, LegacySSE: true, Batching: true},
	{Version: Version20241105, LegacySSE: true},
}

// versionOf returns the row of version v. A version not in the table is
// served by none of the transports and has none of the features, except
// that a later date than 2025-11-25 keeps input errors as results (the
// versions are dates, so they compare as strings; ToolError is exported
// and may be asked about any version).
func versionOf(v string) versionInfo {
	for i := range versionTable {
		if versionTable[i].Version == v {
			return versionTable[i]
		}
	}
	return versionInfo{Version: v, InputErrorsAsResults: v >= Version20251125}
}

// versionsWhere lists the versions of the rows that has, newest first.
func versionsWhere(has func(versionInfo) bool) []string {
	var out []string
	for _, v := range versionTable {
		if has(v) {
			out = append(out, v.Version)
		}
	}
	return out
}

var (
	// supportedVersions are the versions initialize accepts on Streamable
	// HTTP, newest first.
	supportedVersions = versionsWhere(func(v versionInfo) bool { return v.Streamable })
	// legacyVersions are the versions initialize accepts on the HTTP+SSE
	// transport.
	legacyVersions = versionsWhere(func(v versionInfo) bool { return v.LegacySSE })
	// modernVersions are the stateless versions this transport serves.
	modernVersions = versionsWhere(func(v versionInfo) bool { return v.Stateless })
	// discoverVersions is DiscoverResult.supportedVersions and the
	// "supported" list of UnsupportedProtocolVersion: the stateless
	// versions, then the session-based ones a client reaches with
	// initialize (a dual-era server).
	discoverVersions = append(slices.Clone(modernVersions), supportedVersions...)
)

// SupportedVersions returns the protocol versions initialize accepts on
// Streamable HTTP, newest first.
func SupportedVersions() []string { return slices.Clone(supportedVersions) }

// negotiate answers a client's requested version: the same version when
// it is among supported, otherwise the latest (MCP basic/lifecycle:
// "Otherwise, the server MUST respond with another protocol version it
// supports. This SHOULD be the latest version supported by the server.").
func negotiate(requested string, supported []string) string {
	if slices.Contains(supported, requested) {
		return requested
	}
	return LatestVersion
}
