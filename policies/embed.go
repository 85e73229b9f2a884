// Package policies embeds mcpgate's Rego policy bundles, one folder per
// surface (DESIGN.md §2).
package policies

import "embed"

// FS holds the supacloud bundle as files under "supacloud/": the policy
// modules (package supacloud), their *_test.rego files (package
// supacloud_test) and data.json. Load it with its folder as the path prefix
// so data.json lands at data.supacloud (data.supacloud.grants,
// data.supacloud.permissions); the query for one tools/call is
// data.supacloud.decision and for tools/list data.supacloud.visible_tools
// (contract in supacloud/README.md). Skip files ending in _test.rego when
// serving; they only matter to `opa test`.
//
//go:embed supacloud
var FS embed.FS
