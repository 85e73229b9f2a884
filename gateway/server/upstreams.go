package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/adapters/bridge"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/upstreams"
	"github.com/mcpgate/mcpgate/tools"
)

// Bridged is what /readyz shows of one surface's bridged upstreams
// (*bridge.Bridge): each one's state by name.
type Bridged interface {
	Status() []bridge.Status
}

// registry gives sf a tool registry and the tool list its policy ranges
// over when MCPGATE_UPSTREAMS_FILE is set, before its policy is compiled
// (policy.Options.ToolSet); without the file the surface serves its
// catalog alone, as before.
func (a *App) registry(sf *Surface) {
	if a.Config.Upstreams.File == "" {
		return
	}
	sf.Registry = tools.NewRegistry(sf.Catalog)
	sf.ToolSet = policy.NewToolSet(pipeline.ToolRefs(sf.Catalog))
}

// openBridges reads and checks MCPGATE_UPSTREAMS_FILE against the
// surfaces' catalogs (a bad file stops the start with its problems) and
// builds one bridge per surface that has upstreams, closed with the App.
// An upstream that cannot be reached does not stop the start: its bridge
// shows it degraded and tries it again every MCPGATE_UPSTREAM_REFRESH.
//
// The bridged tools join the surface's registry (listed, decided and
// called through its one pipeline, docs/requirements.md#bridged-tools),
// again after every change the bridge sees (syncBridged).
func (a *App) openBridges(ctx context.Context, log *zap.Logger, version string, main *Surface) error {
	cfg := a.Config.Upstreams
	if cfg.File == "" {
		return nil
	}
	ccCat, err := a.ccCatalog()
	if err != nil {
		return err
	}
	file, err := upstreams.Load(cfg.File, upstreams.Options{Catalogs: map[string][]string{
		gateway.SurfaceSupaCloud: toolNames(a.Catalog),
		gateway.SurfaceCCServer:  toolNames(ccCat),
	}, Reserved: reservedNames(a.Policy)})
	if err != nil {
		return err
	}
	a.Bridges = map[string]*bridge.Bridge{}
	for _, sf := range []string{gateway.SurfaceSupaCloud, gateway.SurfaceCCServer} {
		ups := file.For(sf)
		if len(ups) == 0 {
			continue
		}
		if sf == gateway.SurfaceCCServer && a.CC == nil {
			log.Warn("MCPGATE_UPSTREAMS_FILE declares upstreams of the ccserver surface, which is off (MCPGATE_CCSERVER_LISTEN unset); they are not bridged", zap.Int("upstreams", len(ups)))
			continue
		}
		specs := make([]bridge.Upstream, len(ups))
		for i, u := range ups {
			specs[i] = bridge.Upstream{Name: u.Name, Prefix: u.Prefix, URL: u.URL.Value(), Header: u.Header(), Tier: u.Tier, Group: u.Group}
			if o := u.OAuth; o != nil {
				specs[i].OAuth = &bridge.OAuth{TokenURL: o.TokenURL.Value(), ClientID: o.ClientID.Value(), ClientSecret: o.ClientSecret.Value(), Scopes: o.Scopes}
			}
		}
		surface := main
		if sf == gateway.SurfaceCCServer {
			surface = a.CC.Surface
		}
		sync := &bridgedSync{sf: surface, log: log.With(zap.String("surface", sf))}
		b, err := bridge.New(ctx, bridge.Options{
			Upstreams: specs, Refresh: cfg.Refresh, Timeout: cfg.Timeout,
			ClientName: "mcpgate", ClientVersion: version, Logger: log.With(zap.String("surface", sf)),
			OnChange: sync.changed,
		})
		if err != nil {
			return fmt.Errorf("MCPGATE_UPSTREAMS_FILE=%s: %w", cfg.File, err)
		}
		a.closers = append(a.closers, b.Close)
		a.Bridges[sf] = b
		surface.Bridged = b
		sync.b.Store(b)
		sync.changed()
		for _, st := range b.Status() {
			log.Info("bridged upstream", zap.String("surface", sf), zap.String("upstream", st.Name),
				zap.String("state", string(st.State)), zap.Int("tools", st.Tools))
		}
	}
	return nil
}

// bridgedSync keeps a surface's registry, and the tool list its policy
// ranges over, in step with its bridge: after each change the bridge
// tells (a tool added, removed or redefined; a refresh or the upstream's
// list_changed), the bridged layer is replaced and the open sessions
// whose tools/list changed are told, through the surface's one
// tool-list refresh (Surface.RefreshTools).
type bridgedSync struct {
	sf  *Surface
	log *zap.Logger
	b   atomic.Pointer[bridge.Bridge] // nil while bridge.New runs
	mu  sync.Mutex                    // one sync at a time, in order
}

func (s *bridgedSync) changed() {
	b := s.b.Load()
	if b == nil {
		return // bridge.New's first listing: synced once it returns
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	listed := b.Tools()
	bt := make([]tools.BridgedTool, len(listed))
	for i, t := range listed {
		bt[i] = tools.BridgedTool{Name: t.Name, Upstream: t.Upstream, Tier: t.Tier, Group: t.Group,
			Description: t.Listed.Description, InputSchema: t.Listed.InputSchema, Annotations: t.Listed.Annotations}
	}
	cat, dropped := s.sf.Registry.SetBridged(bt)
	for _, d := range dropped {
		s.log.Warn("bridged tool not offered", zap.String("tool", d.Name), zap.String("reason", d.Reason))
	}
	s.sf.ToolSet.Set(pipeline.ToolRefs(cat))
	s.sf.RefreshTools(func(*gateway.Principal) bool { return true })
}

// reservedNames are the names a SupaCloud upstream may not take, because
// its upstream wildcard supacloud.<name>.* would be one of the policy's
// own grants (supacloud.read.*, supacloud.conversation.*, …).
func reservedNames(g Granter) []string {
	entries, prefix := g.Grants()
	var out []string
	for _, e := range entries {
		if mid, ok := strings.CutPrefix(e, prefix); ok && prefix != "" {
			if name, ok := strings.CutSuffix(mid, ".*"); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

// bridgedGrants accepts, besides what next accepts, the grants of the
// SupaCloud upstreams of MCPGATE_UPSTREAMS_FILE: the upstream wildcard
// supacloud.<name>.*, and a tool name under an upstream's prefix (bare or
// as supacloud.<name>), listed now or not: an upstream that is down, or
// a tool under review, is still granted by the profile that names it.
func (a *App) bridgedGrants(next func(string) error) func(string) error {
	b := a.Bridges[gateway.SurfaceSupaCloud]
	if b == nil {
		return next
	}
	_, prefix := a.Policy.Grants()
	var ups []bridge.Upstream
	for _, u := range b.Upstreams() {
		ups = append(ups, u)
	}
	return func(entry string) error {
		for _, u := range ups {
			if entry == prefix+u.Name+".*" {
				return nil
			}
			name := strings.TrimPrefix(entry, prefix)
			if rest, ok := strings.CutPrefix(name, u.Prefix); ok && rest != "" {
				return nil
			}
		}
		return next(entry)
	}
}

// ccCatalog is the cc_server surface's catalog, loaded when the surface
// is off (the file's prefixes are checked against it all the same).
func (a *App) ccCatalog() (*tools.Catalog, error) {
	if a.CC != nil {
		return a.CC.Surface.Catalog, nil
	}
	c, err := tools.LoadCCServer()
	if err != nil {
		return nil, fmt.Errorf("cc_server tool catalog: %w", err)
	}
	return c, nil
}

// toolNames are the names of cat's tools.
func toolNames(cat *tools.Catalog) []string {
	ts := cat.Tools()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}

// readyUpstreams is the upstreams part of /readyz: per surface, each
// bridged upstream's state by name (never its URL).
func readyUpstreams(bridges map[string]Bridged) map[string]map[string]bridge.State {
	out := make(map[string]map[string]bridge.State, len(bridges))
	for sf, b := range bridges {
		states := map[string]bridge.State{}
		for _, st := range b.Status() {
			states[st.Name] = st.State
		}
		out[sf] = states
	}
	return out
}
