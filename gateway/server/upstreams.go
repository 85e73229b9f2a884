package server

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/adapters/bridge"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/upstreams"
	"github.com/mcpgate/mcpgate/tools"
)

// Bridged is what /readyz shows of one surface's bridged upstreams
// (*bridge.Bridge): each one's state by name.
type Bridged interface {
	Status() []bridge.Status
}

// openBridges reads and checks MCPGATE_UPSTREAMS_FILE against the
// surfaces' catalogs (a bad file stops the start with its problems) and
// builds one bridge per surface that has upstreams, closed with the App.
// An upstream that cannot be reached does not stop the start: its bridge
// shows it degraded and tries it again every MCPGATE_UPSTREAM_REFRESH.
//
// The bridged tools are not offered to clients yet: the bridges list
// them and /readyz shows their upstreams' states.
func (a *App) openBridges(ctx context.Context, log *zap.Logger, version string) error {
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
	}})
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
		b, err := bridge.New(ctx, bridge.Options{
			Upstreams: specs, Refresh: cfg.Refresh, Timeout: cfg.Timeout,
			ClientName: "mcpgate", ClientVersion: version, Logger: log.With(zap.String("surface", sf)),
		})
		if err != nil {
			return fmt.Errorf("MCPGATE_UPSTREAMS_FILE=%s: %w", cfg.File, err)
		}
		a.closers = append(a.closers, b.Close)
		a.Bridges[sf] = b
		for _, st := range b.Status() {
			log.Info("bridged upstream", zap.String("surface", sf), zap.String("upstream", st.Name),
				zap.String("state", string(st.State)), zap.Int("tools", st.Tools))
		}
	}
	return nil
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
