package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/policies"
)

// startupSummary is what the start-up log line tells the operator: the
// version, the edition, the store (for SQLite its file), each surface and
// its addresses, whether the admin API is on, where the probes are, the
// policy bundle and its revision, and where allowed calls go. It is
// computed from the configuration and the open listeners; no secret enters
// it (a PostgreSQL URL loses its password and query values).
func startupSummary(cfg *config.Config, ls *server.Listeners) ([]zap.Field, error) {
	base := "http://" + ls.Main.Addr().String()
	fields := []zap.Field{
		zap.String("addr", ls.Main.Addr().String()), // the main listener, host:port; scripts and tests read it
		zap.String("version", versionInfo().Version),
		zap.String("edition", string(cfg.Edition)),
	}
	if path, ok, _ := config.SQLitePath(cfg.DatabaseURL); ok { // cfg is valid: no error
		if abs, err := filepath.Abs(path); err == nil && !strings.HasPrefix(path, "file:") && path != ":memory:" {
			path = abs
		}
		fields = append(fields, zap.String("store", "sqlite"), zap.String("sqlite_file", path))
	} else {
		fields = append(fields, zap.String("store", "postgres"), zap.String("database", gateway.DisplayURL(cfg.DatabaseURL)))
	}
	// One surface today; a second gets its own listener and line here.
	fields = append(fields,
		zap.String("surface", "supacloud"),
		zap.String("mcp", base+"/mcp"),
		zap.String("api_mcp", base+"/api/mcp"),
		zap.String("sse", base+"/sse"),
	)
	if cfg.AdminToken != "" {
		fields = append(fields, zap.String("admin_api", base+"/admin/v1"))
	} else {
		fields = append(fields, zap.String("admin_api", "off (set MCPGATE_ADMIN_TOKEN to turn it on)"))
	}
	probes := base
	if ls.Metrics != nil {
		probes = "http://" + ls.Metrics.Addr().String()
	}
	fields = append(fields, zap.String("probes", probes+"/healthz, /readyz, /metrics"))
	source, rev := "embedded", policies.EmbeddedRevision()
	if cfg.PolicyDir != "" {
		var err error
		if rev, err = policies.Revision(os.DirFS(cfg.PolicyDir)); err != nil {
			return nil, fmt.Errorf("MCPGATE_POLICY_DIR=%s: %w", cfg.PolicyDir, err)
		}
		source = cfg.PolicyDir
	}
	fields = append(fields, zap.String("policy", source), zap.String("policy_revision", rev))
	tools := "demo backend (in memory)"
	if cfg.UpstreamURL != "" {
		tools = "upstream " + gateway.DisplayURL(cfg.UpstreamURL)
	}
	return append(fields, zap.String("tools", tools)), nil
}
