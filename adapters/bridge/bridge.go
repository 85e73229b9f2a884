// Package bridge bridges the MCP servers an operator declares for one
// surface (MCPGATE_UPSTREAMS_FILE) into a registry of tools: one
// mcpupstream client per upstream, each upstream's tools listed at start
// and again every refresh interval and exposed as <prefix><upstream tool
// name>, and a call of a bridged tool routed to the upstream that owns it
// under the upstream's own name with the client's exact argument bytes.
//
// An upstream that is down at start does not stop the bridge: it is
// degraded, its tools absent, and it is tried again at each refresh. A
// refresh that fails keeps the upstream's last listed tools (so a client
// sees the same list, and a call gets a tool execution error naming the
// upstream rather than "unknown tool"). An upstream that is down, slow
// past the timeout or answers garbage fails only the calls of its own
// tools, naming it with a reason code: an error marked not dispatched
// when the call never reached it, else a tool execution error
// (CallTool). ReviewTools (pins.go) checks the listed definitions
// against their pins.
//
// Besides the timed refreshes, an upstream's
// notifications/tools/list_changed (heard on the session's standalone GET
// stream or on a call's stream) starts a refresh at once; Refresh does
// too.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/adapters/mcpupstream"
	"github.com/mcpgate/mcpgate/gateway"
)

// DefaultRefresh is how often the upstreams' tools are listed again when
// Options.Refresh is zero (MCPGATE_UPSTREAM_REFRESH's default).
const DefaultRefresh = 5 * time.Minute

// DefaultMaxMessageBytes bounds one message of a bridged upstream's reply
// when Options.MaxMessageBytes is zero: 8 MiB, so that a reply of 10 MB
// (an upstream answering garbage) is a tool execution error naming the
// upstream (upstream.reply_too_large), not a result passed to the client.
const DefaultMaxMessageBytes = 8 << 20

// Upstream declares one bridged MCP server (gateway/upstreams.Upstream,
// as the wiring hands it over).
type Upstream struct {
	// Name names the upstream in messages, logs and /readyz.
	Name string
	// Prefix goes before each of its tools' names in the registry.
	Prefix string
	// URL is its Streamable HTTP endpoint; never shown (messages use Name).
	URL string
	// Header is sent with every request to it (credentials).
	Header http.Header
	// Tier (SupaCloud) or Group (cc_server) is what policy grants its
	// tools by; the upstream's annotations never are.
	Tier  gateway.Tier
	Group string
	// OAuth, when not nil, puts a bearer token of these client
	// credentials on every request (replacing an Authorization header).
	OAuth *OAuth
	// AllowNewTools pins and serves a tool that appears after the
	// upstream's first review (new_tools: allow); false quarantines it
	// (ReviewTools).
	AllowNewTools bool
}

// Options configures a Bridge.
type Options struct {
	// Upstreams of the surface; their prefixes must not start one another
	// (gateway/upstreams checks it).
	Upstreams []Upstream
	// Refresh is how often every upstream's tools are listed again;
	// default DefaultRefresh.
	Refresh time.Duration
	// Timeout bounds one upstream operation (a tools/call, a tools/list
	// walk, the handshake); default mcpupstream.DefaultTimeout.
	Timeout time.Duration
	// ClientName and ClientVersion identify the gateway to the upstreams.
	ClientName, ClientVersion string
	// HTTPClient, when set, sends the requests (tests); nil: mcpupstream's.
	HTTPClient *http.Client
	// Logger receives an upstream's listing failures; nil: none.
	Logger *zap.Logger
	// MaxMessageBytes bounds one message of an upstream's reply, in
	// bytes; zero is DefaultMaxMessageBytes, and mcpupstream's own bound
	// (16 MiB) caps it. A reply past it is a tool execution error
	// (upstream.reply_too_large).
	MaxMessageBytes int
	// OnChange is called after a refresh changed the registry (a tool
	// added, removed or redefined), without locks held; nil: nothing.
	OnChange func()
}

// Tool is one bridged tool of the registry.
type Tool struct {
	// Name is the registry's name: the upstream's prefix and Listed.Name.
	Name string
	// Upstream is the name of the upstream that owns it.
	Upstream string
	// Tier or Group is the upstream's, from the upstreams file.
	Tier  gateway.Tier
	Group string
	// Listed is the tool as the upstream listed it, its own name, schemas
	// and annotations (the upstream's claims, never a grant) as sent.
	Listed mcpupstream.UpstreamTool
}

// State is an upstream's health as /readyz shows it.
type State string

// The states of an upstream.
const (
	// StateOK: its last listing succeeded.
	StateOK State = "ok"
	// StateDegraded: it could not be reached or listed at the last try;
	// the tools of its last successful listing (none, if it never had
	// one) stay in the registry.
	StateDegraded State = "degraded"
)

// Status is one upstream's state, by name (never its URL).
type Status struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// Tools is how many of its tools are in the registry.
	Tools int `json:"tools"`
}

// Bridge is the registry of one surface's bridged tools and the router of
// their calls (a pipeline adapter). It is safe for concurrent use; create
// it with New, release it with Close.
type Bridge struct {
	opts Options
	ups  []*upstream

	mu    sync.RWMutex
	tools map[string]*Tool // by registry name
	order []string         // registry names, upstream by upstream in the file's order

	refreshMu sync.Mutex    // one refresh at a time
	kick      chan struct{} // an upstream said its tools changed
	stop      context.CancelFunc
	done      chan struct{}
}

// upstream is one bridged server and what the bridge knows of it.
type upstream struct {
	spec Upstream

	mu     sync.Mutex
	client *mcpupstream.Adapter // nil until its first handshake succeeds
	listed []mcpupstream.UpstreamTool
	state  State
	closed bool
}

// New lists every upstream's tools (concurrently, each bounded by the
// timeout), builds the registry and starts the refresh loop, which Close
// stops. An upstream that cannot be reached is degraded, not an error.
//
// Errors: *gateway.Error EInvalid when an upstream's URL is not an
// absolute http(s) URL or its name or prefix is empty or repeated.
func New(ctx context.Context, opts Options) (*Bridge, error) {
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Timeout <= 0 {
		opts.Timeout = mcpupstream.DefaultTimeout
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	b := &Bridge{opts: opts, tools: map[string]*Tool{}, kick: make(chan struct{}, 1)}
	seen := map[string]bool{}
	for _, u := range opts.Upstreams {
		if u.Name == "" || u.Prefix == "" || seen[u.Name] {
			return nil, gateway.Errorf(gateway.EInvalid, "bridged upstream %q: a name of its own and a prefix are required", u.Name)
		}
		seen[u.Name] = true
		b.ups = append(b.ups, &upstream{spec: u, state: StateDegraded})
	}
	var inv *invalidError
	if err := b.refresh(ctx); errors.As(err, &inv) {
		_ = b.closeUpstreams()
		return nil, inv.err
	}
	loop, stop := context.WithCancel(context.Background())
	b.stop, b.done = stop, make(chan struct{})
	go b.loop(loop)
	return b, nil
}

// loop refreshes every opts.Refresh until ctx ends.
func (b *Bridge) loop(ctx context.Context) {
	defer close(b.done)
	tick := time.NewTicker(b.opts.Refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = b.Refresh(ctx)
		case <-b.kick:
			_ = b.Refresh(ctx)
		}
	}
}

// Refresh lists every upstream's tools now (concurrently) and updates
// the registry: an upstream that answers replaces its tools, one that
// does not keeps its last listed tools and is degraded. It returns the
// upstreams' failures joined (each naming its upstream), nil when all
// answered.
func (b *Bridge) Refresh(ctx context.Context) error {
	err := b.refresh(ctx)
	var inv *invalidError
	if errors.As(err, &inv) {
		return inv.err
	}
	return err
}

// invalidError is an upstream that can never work (its URL refused).
type invalidError struct{ err error }

func (e *invalidError) Error() string { return e.err.Error() }

func (b *Bridge) refresh(ctx context.Context) error {
	b.refreshMu.Lock()
	defer b.refreshMu.Unlock()
	errs := make([]error, len(b.ups))
	var wg sync.WaitGroup
	for i, u := range b.ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.list(ctx, u)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		var inv *invalidError
		if errors.As(err, &inv) {
			return err
		}
	}
	if b.rebuild() && b.opts.OnChange != nil {
		b.opts.OnChange()
	}
	return errors.Join(errs...)
}

// list connects u when it has no client yet and lists its tools.
func (b *Bridge) list(ctx context.Context, u *upstream) error {
	c, err := b.client(ctx, u)
	if err == nil {
		var listed []mcpupstream.UpstreamTool
		if listed, err = c.ListTools(ctx); err == nil {
			for name, reason := range c.Excluded() {
				b.log().Warn("bridged upstream tool not offered", zap.String("upstream", u.spec.Name), zap.String("tool", name), zap.String("reason", reason))
			}
			u.mu.Lock()
			u.listed, u.state = listed, StateOK
			u.mu.Unlock()
			return nil
		}
	}
	var ge *gateway.Error
	if errors.As(err, &ge) && ge.Code == gateway.EInvalid && c == nil {
		return &invalidError{fmt.Errorf("bridged upstream %q: %w", u.spec.Name, err)}
	}
	u.mu.Lock()
	u.state = StateDegraded
	kept := len(u.listed)
	u.mu.Unlock()
	b.log().Warn("bridged upstream degraded: its tools could not be listed; its last listed tools stay, and it is tried again at the next refresh",
		zap.String("upstream", u.spec.Name), zap.Int("tools_kept", kept), zap.Error(err))
	return fmt.Errorf("bridged upstream %q: %w", u.spec.Name, err)
}

// client returns u's upstream client, making it (the MCP handshake) when
// u has none yet.
func (b *Bridge) client(ctx context.Context, u *upstream) (*mcpupstream.Adapter, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, gateway.Errorf(gateway.EUnavailable, "bridged upstream %q is closed", u.spec.Name)
	}
	if u.client != nil {
		return u.client, nil
	}
	c, err := mcpupstream.New(ctx, u.spec.URL, mcpupstream.Options{
		HTTPClient: b.httpClient(u.spec), Header: u.spec.Header, Timeout: b.opts.Timeout,
		ClientName: b.opts.ClientName, ClientVersion: b.opts.ClientVersion, Name: u.spec.Name,
		OnToolsChanged: b.toolsChanged, MaxMessageBytes: b.opts.MaxMessageBytes, LimitAsError: true,
	})
	if err != nil {
		return nil, err
	}
	u.client = c
	return c, nil
}

// toolsChanged asks the loop for a refresh (an upstream's
// notifications/tools/list_changed); asks made while one is pending are
// one.
func (b *Bridge) toolsChanged() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// rebuild makes the registry from every upstream's last listed tools and
// reports whether it changed. A name an upstream lists twice keeps its
// first definition.
func (b *Bridge) rebuild() bool {
	tools := map[string]*Tool{}
	var order []string
	for _, u := range b.ups {
		u.mu.Lock()
		listed := u.listed
		u.mu.Unlock()
		for _, t := range listed {
			name := u.spec.Prefix + t.Name
			if t.Name == "" || tools[name] != nil {
				b.log().Warn("bridged upstream tool not offered: its name is empty or listed twice", zap.String("upstream", u.spec.Name), zap.String("tool", t.Name))
				continue
			}
			tools[name] = &Tool{Name: name, Upstream: u.spec.Name, Tier: u.spec.Tier, Group: u.spec.Group, Listed: t}
			order = append(order, name)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	changed := !slices.Equal(order, b.order)
	for _, name := range order {
		if changed {
			break
		}
		changed = !sameTool(tools[name], b.tools[name])
	}
	b.tools, b.order = tools, order
	return changed
}

// sameTool reports whether a and b are the same definition.
func sameTool(a, b *Tool) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, _ := json.Marshal(a.Listed)
	y, _ := json.Marshal(b.Listed)
	return string(x) == string(y)
}

// Tools returns the registry: every bridged tool, upstream by upstream in
// the file's order, each in its upstream's order.
func (b *Bridge) Tools() []Tool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]Tool, len(b.order))
	for i, name := range b.order {
		out[i] = *b.tools[name]
	}
	return out
}

// Lookup returns the bridged tool of registry name.
func (b *Bridge) Lookup(name string) (Tool, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	t, ok := b.tools[name]
	if !ok {
		return Tool{}, false
	}
	return *t, true
}

// Upstreams returns the upstreams of the bridge, in the file's order.
func (b *Bridge) Upstreams() []Upstream {
	out := make([]Upstream, len(b.ups))
	for i, u := range b.ups {
		out[i] = u.spec
	}
	return out
}

// Status returns each upstream's state, in the file's order.
func (b *Bridge) Status() []Status {
	counts := map[string]int{}
	b.mu.RLock()
	for _, t := range b.tools {
		counts[t.Upstream]++
	}
	b.mu.RUnlock()
	out := make([]Status, len(b.ups))
	for i, u := range b.ups {
		u.mu.Lock()
		out[i] = Status{Name: u.spec.Name, State: u.state, Tools: counts[u.spec.Name]}
		u.mu.Unlock()
	}
	return out
}

// CallTool routes call to the upstream that owns the bridged tool
// call.Tool, under the upstream's own name, with call's arguments as
// they are (RawArguments: the client's bytes) and its identity.
//
// A failure names the upstream and carries a reason code
// (mcpupstream.ReasonOf: upstream.unreachable, upstream.timeout,
// upstream.rpc_error, upstream.reply_too_large,
// upstream.malformed_reply). When the call provably never reached the
// upstream's tool (not connected, connection refused, the upstream
// refused it as a protocol error), it is returned as an error marked
// gateway.ErrNotDispatched, so the pipeline knows the tool did not run;
// otherwise (the tool may have run: slow past the timeout, a reply that
// never ends, is too large, is not JSON, or a JSON-RPC error) it is a
// result with IsError, a tool execution error. Calls of other upstreams
// do not wait for it. A caller that gave up gets the upstream client's
// error as it is.
//
// Errors: *gateway.Error ENotFound (marked gateway.ErrNotDispatched) when
// call.Tool is not a bridged tool; EUnavailable (marked) when the call
// was not dispatched, its Reasons the one reason code.
func (b *Bridge) CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error) {
	b.mu.RLock()
	t, ok := b.tools[call.Tool]
	b.mu.RUnlock()
	if !ok {
		return nil, &gateway.Error{Code: gateway.ENotFound, Err: gateway.NotDispatched(errors.New("not bridged")),
			Message: fmt.Sprintf("tool %q is not a bridged tool; list the tools to see the names", call.Tool)}
	}
	u := b.upstream(t.Upstream)
	u.mu.Lock()
	c := u.client
	u.mu.Unlock()
	if c == nil { // listed means it connected once; closed since
		return nil, notRun(call.Tool, t.Upstream, mcpupstream.ReasonUnreachable, "it is not connected",
			gateway.NotDispatched(errors.New("bridged upstream closed")))
	}
	up := call
	up.Tool = t.Listed.Name
	res, err := c.CallTool(ctx, up)
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	reason := mcpupstream.ReasonOf(err)
	if errors.Is(err, gateway.ErrNotDispatched) {
		return nil, notRun(call.Tool, t.Upstream, reason, gateway.ErrorMessageOf(err), err)
	}
	return toolError(fmt.Sprintf("%s failed at upstream %q [%s]: %s", call.Tool, t.Upstream, reason, gateway.ErrorMessageOf(err))), nil
}

// notRun is the error of a call of tool that never reached upstream:
// EUnavailable with reason as its one reason, cause (marked
// gateway.ErrNotDispatched) wrapped, and marked UpstreamFailure, so the
// client gets a tool execution error naming the upstream.
func notRun(tool, upstream, reason, why string, cause error) error {
	msg := fmt.Sprintf("%s was not run: upstream %q, which serves it, could not take the call (%s); try again later", tool, upstream, why)
	return &gateway.Error{Code: gateway.EUnavailable, Err: cause, Message: msg, UpstreamFailure: true,
		Reasons: []gateway.Reason{{Code: reason, Message: msg}}}
}

// upstream returns the upstream named name (one of b.ups).
func (b *Bridge) upstream(name string) *upstream {
	for _, u := range b.ups {
		if u.spec.Name == name {
			return u
		}
	}
	return nil
}

// toolError is a tool execution error: a result with IsError and text.
func toolError(text string) *gateway.ToolResult {
	return &gateway.ToolResult{IsError: true, Content: []map[string]any{{"type": "text", "text": text}}}
}

func (b *Bridge) log() *zap.Logger {
	if b.opts.Logger == nil {
		return zap.NewNop()
	}
	return b.opts.Logger
}

// Close stops the refresh loop and ends every upstream's session.
func (b *Bridge) Close() error {
	if b.stop != nil {
		b.stop()
		<-b.done
	}
	return b.closeUpstreams()
}

func (b *Bridge) closeUpstreams() error {
	var errs []error
	for _, u := range b.ups {
		u.mu.Lock()
		c := u.client
		u.client, u.closed = nil, true
		u.mu.Unlock()
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
