package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/adapters/bridge"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditlog"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/store"
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
func (a *App) openBridges(ctx context.Context, log *zap.Logger, version string, main *Surface, reg prometheus.Registerer) error {
	cfg := a.Config.Upstreams
	if cfg.File == "" {
		return nil
	}
	ccCat, err := a.ccCatalog()
	if err != nil {
		return err
	}
	file, err := upstreams.Load(cfg.File, upstreamsOptions(a.Catalog, ccCat, reservedNames(a.Policy)))
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
			specs[i] = bridge.Upstream{Name: u.Name, Prefix: u.Prefix, URL: u.URL.Value(), Header: u.Header(), Tier: u.Tier, Group: u.Group,
				AllowNewTools: u.NewTools == upstreams.NewToolsAllow}
			if o := u.OAuth; o != nil {
				specs[i].OAuth = &bridge.OAuth{TokenURL: o.TokenURL.Value(), ClientID: o.ClientID.Value(), ClientSecret: o.ClientSecret.Value(), Scopes: o.Scopes}
			}
		}
		surface := main
		if sf == gateway.SurfaceCCServer {
			surface = a.CC.Surface
		}
		if a.upstreamTools == nil {
			a.upstreamTools = upstreamToolsGauge(reg)
		}
		sync := &bridgedSync{sf: surface, name: sf, store: a.Store, audit: a.Audit, gauge: a.upstreamTools, log: log.With(zap.String("surface", sf))}
		b, err := bridge.New(ctx, bridge.Options{
			Upstreams: specs, Refresh: cfg.Refresh, Timeout: cfg.Timeout,
			ClientName: "mcpgate", ClientVersion: version, Logger: log.With(zap.String("surface", sf)),
			OnChange: sync.changed,
		})
		if err != nil {
			return fmt.Errorf("MCPGATE_UPSTREAMS_FILE=%s: %w", cfg.File, err)
		}
		a.closers = append(a.closers, b.Close, func() error { sync.wg.Wait(); return nil })
		a.Bridges[sf] = b
		a.syncs = append(a.syncs, sync)
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

// checkUpstreamsFile reads MCPGATE_UPSTREAMS_FILE against the built-in
// catalogs before anything is opened, so that a mistake in it stops the
// start at once, not after the store was reached (or in its place, when
// the store cannot be). openBridges reads it again once the catalog holds
// MCPGATE_UPSTREAM_URL's tools and the policy's own grants are known.
func (a *App) checkUpstreamsFile() error {
	if a.Config.Upstreams.File == "" {
		return nil
	}
	sc, err := tools.Load()
	if err != nil {
		return fmt.Errorf("tool catalog: %w", err)
	}
	cc, err := tools.LoadCCServer()
	if err != nil {
		return fmt.Errorf("cc_server tool catalog: %w", err)
	}
	_, err = upstreams.Load(a.Config.Upstreams.File, upstreamsOptions(sc, cc, nil))
	return err
}

// upstreamsOptions checks an upstreams file against the surfaces'
// catalogs and the names reserved for the policy's own grants.
func upstreamsOptions(supacloud, ccserver *tools.Catalog, reserved []string) upstreams.Options {
	return upstreams.Options{Catalogs: map[string][]string{
		gateway.SurfaceSupaCloud: toolNames(supacloud),
		gateway.SurfaceCCServer:  toolNames(ccserver),
	}, Reserved: reserved}
}

// bridgedSync keeps a surface's registry, and the tool list its policy
// ranges over, in step with its bridge and the pins of its tools
// (docs/requirements.md#pinned-tools): after each change the bridge
// tells (a tool added, removed or redefined; a refresh or the upstream's
// list_changed) and each change of the pins the change feed announces
// (a decision through any replica), the listing is reviewed against the
// pins (bridge.ReviewTools; first sights and quarantines written to the
// store), the bridged layer is replaced without the quarantined tools,
// and the open sessions whose tools/list changed are told, through the
// surface's one tool-list refresh (Surface.RefreshTools). The pins are
// cached here: a call never reads them from the store.
type bridgedSync struct {
	sf    *Surface
	name  string // the surface
	store store.Pins
	audit *auditlog.Log // records each quarantine this replica wrote (kind upstream)
	gauge *prometheus.GaugeVec
	log   *zap.Logger
	b     atomic.Pointer[bridge.Bridge] // nil while bridge.New runs

	mu     sync.Mutex // one sync at a time, in order
	pins   []gateway.ToolPin
	counts map[string]map[gateway.PinState]int // by upstream, as count set them
	wg     sync.WaitGroup                      // reloads the feed started
}

// pinStoreTimeout bounds one sync's store reads and writes.
const pinStoreTimeout = 5 * time.Second

// changed is the bridge's OnChange: the listing changed.
func (s *bridgedSync) changed() { s.sync(false) }

// pinsChanged is the change feed's: a pin changed through some replica;
// the pins are read again in the background.
func (s *bridgedSync) pinsChanged() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sync(true)
	}()
}

// sync reviews the bridge's listing against the pins (read from the
// store first when reload, or when none are cached yet), writes what the
// review adds or changes, and replaces the bridged layer.
func (s *bridgedSync) sync(reload bool) {
	b := s.b.Load()
	if b == nil {
		return // bridge.New's first listing: synced once it returns
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), pinStoreTimeout)
	defer cancel()
	if reload || s.pins == nil {
		if !s.load(ctx) {
			return
		}
	}
	listed := b.Tools()
	rev := bridge.ReviewTools(s.name, b.Upstreams(), listed, s.pins, time.Now().UTC())
	// Twice at most: a write another replica beat (EConflict) is reviewed
	// again against the pins as it left them.
	for round := 0; round < 2 && len(rev.Add)+len(rev.Update) > 0; round++ {
		for _, p := range rev.Add {
			added, err := s.store.AddToolPin(ctx, p)
			if err != nil {
				s.log.Warn("bridged tool pin not written; its tool stays out until the next refresh", zap.String("upstream", p.Upstream), zap.String("tool", p.Tool), zap.Error(err))
			} else if added && p.State == gateway.PinQuarantined {
				s.recordQuarantine(p)
			}
		}
		for _, p := range rev.Update {
			if err := s.store.UpdateToolPin(ctx, p); gateway.ErrorCodeOf(err) == gateway.EConflict {
				continue // another replica wrote this change, or decided it, first: it records it
			} else if err != nil {
				s.log.Warn("bridged tool pin not updated", zap.String("upstream", p.Upstream), zap.String("tool", p.Tool), zap.Error(err))
				continue
			}
			if p.State == gateway.PinQuarantined {
				s.recordQuarantine(p)
				s.log.Warn("bridged tool quarantined: its definition changed since it was pinned; review it (GET /admin/v1/upstreams/{name}/tools)",
					zap.String("upstream", p.Upstream), zap.String("tool", p.Tool), zap.String("change", p.Change))
			}
		}
		// Another replica may have pinned first: what the store holds wins.
		if !s.load(ctx) {
			return
		}
		rev = bridge.ReviewTools(s.name, b.Upstreams(), listed, s.pins, time.Now().UTC())
	}
	for _, p := range rev.Add {
		if p.State == gateway.PinQuarantined {
			s.log.Warn("bridged tool quarantined until reviewed", zap.String("upstream", p.Upstream), zap.String("tool", p.Tool), zap.String("change", p.Change))
		}
	}
	bt := make([]tools.BridgedTool, len(listed))
	for i, t := range listed {
		bt[i] = tools.BridgedTool{Name: t.Name, Upstream: t.Upstream, Tier: t.Tier, Group: t.Group,
			Description: t.Listed.Description, InputSchema: t.Listed.InputSchema, Annotations: t.Listed.Annotations}
	}
	cat, dropped := s.sf.Registry.SetBridged(bt, rev.Quarantined)
	for _, d := range dropped {
		s.log.Warn("bridged tool not offered", zap.String("tool", d.Name), zap.String("reason", d.Reason))
	}
	s.sf.ToolSet.Set(pipeline.ToolRefs(cat))
	s.count(listed, rev.Quarantined)
	s.sf.RefreshTools(func(*gateway.Principal) bool { return true })
}

// recordQuarantine records, as an audit event of kind upstream, that this
// replica quarantined p (the replica whose write changed the pin records
// it, so each quarantine is one event): actor gateway, reason
// tool.quarantined, the change and both definitions' hashes as arguments.
func (s *bridgedSync) recordQuarantine(p gateway.ToolPin) {
	if s.audit == nil {
		return
	}
	args, _ := json.Marshal(map[string]string{"upstream": p.Upstream, "tool": p.Tool, "change": p.Change,
		"renamed_from": p.RenamedFrom, "pinned_hash": p.Hash, "current_hash": p.CurrentHash})
	s.audit.Record(&gateway.AuditEvent{Kind: gateway.AuditKindUpstream, Actor: "gateway", Surface: s.name,
		Tool: p.Tool, Status: gateway.AuditDenied, ReasonCodes: []string{"tool.quarantined"}, Arguments: args})
}

// load reads the pins from the store; false (logged) when it cannot, and
// the registry then stays as it is.
func (s *bridgedSync) load(ctx context.Context) bool {
	pins, err := s.store.ToolPins(ctx)
	if err != nil {
		s.log.Warn("bridged tools' pins could not be read; the bridged tools stay as they are until the next refresh", zap.Error(err))
		return false
	}
	if pins == nil {
		pins = []gateway.ToolPin{}
	}
	s.pins = pins
	return true
}

// count sets mcpgate_upstream_tools{upstream,state}: per upstream, its
// listed tools served (pinned), held for review (quarantined) and
// rejected.
func (s *bridgedSync) count(listed []bridge.Tool, quarantined map[string]string) {
	rejected := map[string]bool{}
	s.counts = map[string]map[gateway.PinState]int{}
	for _, p := range s.pins {
		if p.Surface == s.name && p.State == gateway.PinRejected {
			rejected[p.Upstream+"\x00"+p.Tool] = true
		}
	}
	for _, u := range s.b.Load().Upstreams() {
		n := map[gateway.PinState]float64{gateway.PinPinned: 0, gateway.PinQuarantined: 0, gateway.PinRejected: 0}
		for _, t := range listed {
			if t.Upstream != u.Name {
				continue
			}
			_, q := quarantined[t.Name]
			switch {
			case q && rejected[t.Upstream+"\x00"+t.Listed.Name]:
				n[gateway.PinRejected]++
			case q:
				n[gateway.PinQuarantined]++
			default:
				n[gateway.PinPinned]++
			}
		}
		s.counts[u.Name] = map[gateway.PinState]int{}
		for st, v := range n {
			s.counts[u.Name][st] = int(v)
			if s.gauge != nil {
				s.gauge.WithLabelValues(u.Name, string(st)).Set(v)
			}
		}
	}
}

// upstreamToolsGauge is mcpgate_upstream_tools, registered on reg.
func upstreamToolsGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcpgate_upstream_tools",
		Help: "Tools a bridged upstream lists, by review state: pinned (served), quarantined (held for review), rejected."},
		[]string{"upstream", "state"})
	reg.MustRegister(g)
	return g
}

// upstreamAdmin is the admin API's view of the bridged upstreams
// (admin.Upstreams): their states from the bridges, their tools' pins
// from the store, decisions through the store, announced at once.
type upstreamAdmin struct{ a *App }

// UpstreamView is one upstream of GET /admin/v1/upstreams.
type UpstreamView struct {
	Name    string                   `json:"name"`
	Surface string                   `json:"surface"`
	State   bridge.State             `json:"state"`
	Tools   map[gateway.PinState]int `json:"tools"`
}

// UpstreamToolView is one tool of GET /admin/v1/upstreams/{name}/tools:
// its pin, registry name and whether the upstream lists it now.
type UpstreamToolView struct {
	Name string `json:"name"`
	gateway.ToolPin
	Listed bool `json:"listed"`
}

func (u upstreamAdmin) List(context.Context) (any, error) {
	out := []UpstreamView{}
	for _, s := range u.a.syncs {
		s.mu.Lock()
		counts := s.counts
		s.mu.Unlock()
		for _, st := range s.b.Load().Status() {
			n := map[gateway.PinState]int{gateway.PinPinned: 0, gateway.PinQuarantined: 0, gateway.PinRejected: 0}
			maps.Copy(n, counts[st.Name])
			out = append(out, UpstreamView{Name: st.Name, Surface: s.name, State: st.State, Tools: n})
		}
	}
	return map[string]any{"upstreams": out}, nil
}

// find returns the sync and upstream of name; ENotFound when no bridge
// has it.
func (u upstreamAdmin) find(name string) (*bridgedSync, bridge.Upstream, error) {
	for _, s := range u.a.syncs {
		for _, up := range s.b.Load().Upstreams() {
			if up.Name == name {
				return s, up, nil
			}
		}
	}
	return nil, bridge.Upstream{}, gateway.Errorf(gateway.ENotFound, "no bridged upstream %q; GET /admin/v1/upstreams lists them", name)
}

func (u upstreamAdmin) Tools(ctx context.Context, name string) (any, error) {
	s, up, err := u.find(name)
	if err != nil {
		return nil, err
	}
	pins, err := u.a.Store.ToolPins(ctx)
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, t := range s.b.Load().Tools() {
		if t.Upstream == name {
			listed[t.Listed.Name] = true
		}
	}
	out := []UpstreamToolView{}
	for _, p := range pins {
		if p.Surface == s.name && p.Upstream == name {
			out = append(out, UpstreamToolView{Name: up.Prefix + p.Tool, ToolPin: p, Listed: listed[p.Tool]})
		}
	}
	return map[string]any{"upstream": name, "tools": out}, nil
}

func (u upstreamAdmin) Decide(ctx context.Context, name, tool string, approve bool, decidedBy string) (any, error) {
	s, up, err := u.find(name)
	if err != nil {
		return nil, err
	}
	p, err := u.a.Store.DecideToolPin(ctx, s.name, name, tool, approve, decidedBy, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	// This replica applies it now; the others hear it on the change feed.
	u.a.Server.announce(gateway.Change{Table: gateway.PinsTable})
	return UpstreamToolView{Name: up.Prefix + p.Tool, ToolPin: *p, Listed: true}, nil
}

// pinsChanged has every bridged surface read its pins again (a change
// of the pins announced on the change feed, or by this process's admin
// API).
func (a *App) pinsChanged() {
	for _, s := range a.syncs {
		s.pinsChanged()
	}
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
