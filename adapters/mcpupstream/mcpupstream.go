// Package mcpupstream forwards allowed tools/call requests to an upstream MCP
// server over Streamable HTTP (MCP 2025-11-25, basic/transports), as raw
// JSON-RPC: the client's argument bytes go out as they came, the upstream's
// result is decoded once with every number kept exact, and nothing else is
// encoded or decoded on the way.
//
// One Adapter keeps one session with the upstream (initialize once, then
// Mcp-Session-Id on every request) and shares it between concurrent calls.
// When the session is lost (the upstream restarted and answers 404 for the
// old session, or it was unreachable for a while) the next call initializes
// a new one transparently; see Adapter.CallTool for when a call is retried.
//
// During a call, what the upstream sends on the call's response stream
// besides the result is relayed to the calling client through the call's
// wire.Relay (wire.RelayFrom): progress notifications (their token
// mapped back to the client's), log messages, and the upstream's requests
// (elicitation, sampling, roots), whose answers are posted back upstream.
// A caller that gives up sends notifications/cancelled upstream.
package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// Keys of the request _meta object that carry the credential's identity to
// the upstream. The upstream must scope its work to MetaWorkspaceID: it is
// the credential's workspace, never a client-supplied one (workspace
// isolation, docs/architecture.md).
const (
	MetaWorkspaceID = "mcpgate/workspace_id"
	MetaTaskID      = "mcpgate/task_id"
	MetaActor       = "mcpgate/actor"
)

// Defaults applied by New when the corresponding Options field is zero.
const (
	DefaultClientName    = "mcpgate"
	DefaultClientVersion = "dev"
	DefaultTimeout       = 30 * time.Second
	// DefaultProtocolVersion is the newest session-based MCP version: the
	// one whose server-to-client requests the adapter relays.
	DefaultProtocolVersion = "2025-11-25"
)

// Options configures an Adapter. The zero value is usable.
type Options struct {
	// HTTPClient sends the HTTP requests; nil means a client of its own
	// with http.DefaultTransport's settings that keeps up to MaxIdleConns
	// idle connections to the upstream and, for a plain http:// upstream
	// with no proxy, writes each request and reads its reply on the
	// calling goroutine instead of through net/http's Transport (README,
	// Connections and probes). Do not set its Timeout: per-call deadlines
	// come from Timeout.
	HTTPClient *http.Client
	// Header is added to every request sent upstream, for example
	// Authorization: Bearer <upstream credential>. It is copied by New.
	Header http.Header
	// ClientName and ClientVersion identify the gateway in the MCP
	// handshake; defaults DefaultClientName and DefaultClientVersion.
	ClientName    string
	ClientVersion string
	// Timeout bounds one upstream operation (connect, tools/call, one
	// tools/list walk), on top of the caller's context; default
	// DefaultTimeout.
	Timeout time.Duration
	// ProtocolVersion pins the MCP protocol version offered to the upstream
	// (e.g. "2025-06-18"); empty offers DefaultProtocolVersion and lets the
	// server negotiate.
	ProtocolVersion string
	// Name, when set, is how messages name the upstream (`upstream MCP
	// server "github"`) instead of its gateway.DisplayURL, and where they tell the
	// operator to look (its url in MCPGATE_UPSTREAMS_FILE instead of
	// MCPGATE_UPSTREAM_URL): a bridged upstream is declared by name, and
	// its address is not shown to the clients that read the messages.
	Name string
	// OnToolsChanged, when set, is called each time the upstream sends
	// notifications/tools/list_changed: on the stream of a request, or on
	// the standalone GET stream the adapter then keeps open on each
	// session it initializes (MCP basic/transports, "Listening for
	// Messages from the Server"; listen.go). It runs on a goroutine of
	// the adapter's and must return soon. Unset: no GET stream is opened.
	OnToolsChanged func()
	// MaxMessageBytes, when positive and below the default (16 MiB),
	// bounds one message of a reply (adapters/bridge: each bridged
	// upstream's own bound).
	MaxMessageBytes int
	// LimitAsError makes CallTool return a reply past a bound as its
	// error (ReasonOf: ReasonTooLarge) rather than as an IsError result,
	// for a caller that names the upstream in its own tool execution
	// error (adapters/bridge).
	LimitAsError bool
}

// UpstreamTool is one tool the upstream lists: its name, title,
// description, input and output JSON Schemas and annotations exactly as
// the upstream sent them (absent ones empty). The annotations
// (readOnlyHint, …) are the upstream's claims, for display and policy
// input, never a grant.
type UpstreamTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Adapter forwards tool calls to one upstream MCP server. It is safe for
// concurrent use; create it with New and release it with Close.
type Adapter struct {
	url        string
	display    string            // gateway.DisplayURL(url), or the quoted Options.Name: the upstream in messages
	setting    string            // where the operator sets the URL, for messages
	secrets    *strings.Replacer // secretReplacer(url), for the errors of the HTTP client
	http       *http.Client
	timeout    time.Duration
	version    string // protocol version offered at initialize
	clientInfo []byte // the initialize params' clientInfo object
	ids        atomic.Int64
	limits     replyLimits // what one upstream reply may make the gateway hold
	limitErr   bool        // Options.LimitAsError
	onTools    func()      // Options.OnToolsChanged

	// sessionOnly is set once the upstream refused a stateless 2026-07-28
	// call: every later call goes on the session.
	sessionOnly atomic.Bool
	// annotations are the x-mcp-header annotations of the tools the last
	// ListTools returned, by tool name (tools without any left out).
	annotations atomic.Pointer[map[string][]wire.ParamHeader]

	mu       sync.Mutex
	sessions [sessionKinds]*upSession // by kind; nil when no live session
	closed   bool
	excluded map[string]string // Excluded
}

// New validates rawURL (an absolute http or https URL of the upstream's
// Streamable HTTP endpoint) and opens a session with the upstream, so that a
// wrong URL or an unreachable upstream is reported at start-up.
//
// Errors: *gateway.Error EInvalid for a malformed URL; EUnavailable when the
// upstream cannot be reached or refuses the MCP handshake.
func New(ctx context.Context, rawURL string, opts Options) (*Adapter, error) {
	if err := checkURL(rawURL); err != nil {
		return nil, err
	}
	name, version := opts.ClientName, opts.ClientVersion
	if name == "" {
		name = DefaultClientName
	}
	if version == "" {
		version = DefaultClientVersion
	}
	info, _ := json.Marshal(map[string]string{"name": name, "version": version})
	a := &Adapter{
		url:        rawURL,
		display:    gateway.DisplayURL(rawURL),
		setting:    "MCPGATE_UPSTREAM_URL",
		secrets:    secretReplacer(rawURL),
		http:       withHeaders(opts.HTTPClient, opts.Header),
		timeout:    opts.Timeout,
		version:    opts.ProtocolVersion,
		clientInfo: info,
		limits:     defaultReplyLimits,
		onTools:    opts.OnToolsChanged,
		limitErr:   opts.LimitAsError,
	}
	if n := opts.MaxMessageBytes; n > 0 && n < a.limits.messageBytes {
		a.limits.messageBytes = n
	}
	if opts.Name != "" {
		a.display = strconv.Quote(opts.Name)
		a.setting = "the url of upstream " + a.display + " in MCPGATE_UPSTREAMS_FILE"
	}
	if a.timeout <= 0 {
		a.timeout = DefaultTimeout
	}
	if a.version == "" {
		a.version = DefaultProtocolVersion
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if _, err := a.currentSession(ctx, relaying); err != nil {
		return nil, err
	}
	return a, nil
}

// redacted stands for a secret of the URL in error texts (the same as
// url.URL.Redacted).
const redacted = "xxxxx"

// secretReplacer replaces, in any text, the parts of rawURL that may be
// secrets: the whole URL by gateway.DisplayURL, and its path, raw query, each
// query value (as sent and as decoded), user and password by "xxxxx".
// Errors of the HTTP client and of the MCP SDK quote the request URL; they
// pass through it before they are wrapped (scrub).
func secretReplacer(rawURL string) *strings.Replacer {
	pairs := []string{rawURL, gateway.DisplayURL(rawURL)}
	u, err := url.Parse(rawURL)
	if err != nil {
		return strings.NewReplacer(pairs...)
	}
	if _, ok := u.User.Password(); ok {
		// net/http quotes the URL with the password as "***" (and
		// url.URL.Redacted as "xxxxx"): those whole forms are the upstream too.
		for _, mask := range []string{"***", redacted} {
			v := *u
			v.User = url.UserPassword(u.User.Username(), mask)
			pairs = append(pairs, v.String(), gateway.DisplayURL(rawURL))
		}
	}
	secrets := []string{u.RawQuery, u.EscapedPath(), u.Path, u.User.String()}
	for _, vs := range u.Query() {
		for _, v := range vs {
			secrets = append(secrets, v, url.QueryEscape(v))
		}
	}
	if pw, ok := u.User.Password(); ok {
		secrets = append(secrets, pw, url.QueryEscape(pw), url.PathEscape(pw))
	}
	// Longest first, so that a secret inside another is not half replaced;
	// very short values (a flag such as "1", the path "/") are not worth
	// garbling text.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if len(s) >= 3 {
			pairs = append(pairs, s, redacted)
		}
	}
	return strings.NewReplacer(pairs...)
}

// scrubbedError is an error whose text went through secretReplacer; it
// unwraps to the original, for errors.Is and errors.As.
type scrubbedError struct {
	err  error
	text string
}

func (e *scrubbedError) Error() string { return e.text }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub returns err with the upstream URL's secrets replaced in its text.
func (a *Adapter) scrub(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{err: err, text: a.secrets.Replace(err.Error())}
}

func checkURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return gateway.Errorf(gateway.EInvalid,
			"upstream MCP URL %q is not an absolute http(s) URL; set MCPGATE_UPSTREAM_URL to e.g. https://tools.internal/mcp", gateway.DisplayURL(rawURL))
	}
	return nil
}

// URL returns the upstream endpoint this adapter forwards to, as
// gateway.DisplayURL shows it.
func (a *Adapter) URL() string { return gateway.DisplayURL(a.url) }

// CallTool forwards call to the upstream as tools/call: the tool name and
// arguments unchanged (the client's bytes, see arguments), and the
// credential's workspace, task and actor in the request _meta under
// MetaWorkspaceID, MetaTaskID and MetaActor (empty values are left out).
// The upstream's CallToolResult is decoded once, numbers as json.Number so
// that every digit reaches the client: content blocks as their JSON
// objects, an object structuredContent as StructuredContent (any other
// value, when there are no content blocks, as one JSON text block),
// isError as IsError, so tool errors pass through as results.
//
// When ctx carries a wire.Relay, what the upstream sends during the
// call is relayed (see the package doc); when the client asked for
// progress, the upstream gets a progress token of the adapter's own
// (unique across the clients that share the session) that is mapped back.
// When ctx ends before the upstream answers, the upstream is sent
// notifications/cancelled for the call.
//
// A call is sent again, once, on a fresh session only when the first attempt
// provably never reached a tool handler: the connection could not be
// dialled, or the upstream answered 404 for a lost session. Any other
// failure is not retried, because tools/call may have side effects; errors
// that prove the tool never ran are marked gateway.ErrNotDispatched.
//
// A reply past one of the bounds of what one reply may make the gateway
// hold (16 MiB per message, 64 MiB and 10,000 messages per event stream,
// 32 relayed requests per call) stops being read and becomes a tool
// execution error (IsError) naming the upstream and the limit.
//
// Errors (*gateway.Error): EUnavailable "upstream MCP server <url>
// unreachable: ..." for transport failures and timeouts; EInvalid when the
// upstream rejects the arguments (JSON-RPC -32602); EUnavailable for any
// other JSON-RPC error from the upstream. A ctx that has already ended
// sends nothing and returns EUnavailable marked gateway.ErrNotDispatched.
func (a *Adapter) CallTool(ctx context.Context, call gateway.ToolCall) (*gateway.ToolResult, error) {
	if err := ctx.Err(); err != nil {
		// Nobody waits for the result: the call is not sent.
		return nil, notDispatched(gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
			"tools/call %s was not sent to upstream MCP server %s: the caller gave up or its deadline passed first", call.Tool, a.display)))
	}
	args, perr := arguments(call)
	if perr != nil {
		return nil, notDispatched(perr)
	}
	relay := wire.RelayFrom(ctx)
	progress := relay != nil && relay.ProgressToken() != nil
	var raw json.RawMessage
	var err error
	input, _ := relay.(wire.InputRelay)
	var round *wire.InputRound
	if input != nil && !a.sessionOnly.Load() {
		round = input.Round()
	}
	if round != nil {
		raw, err = a.callStateless(ctx, call, args, relay, progress, round)
		if errors.Is(err, errNoStateless) {
			round, err = nil, nil
		}
	}
	if round == nil {
		k := relaying
		if input != nil && input.Round() != nil {
			k = kindOf(input.Round().Capabilities) // a stateless client on a session-only upstream
		}
		raw, err = a.roundTripOn(ctx, k, "tools/call "+call.Tool, false, relay, func(id int64) []byte {
			return callBody(id, call, args, progress, nil, traceMeta(ctx))
		})
	}
	if err != nil {
		var big *errReplyLimit
		if errors.As(err, &big) && !a.limitErr {
			// The tool may have run; its reply was too much to hold: the
			// caller (a model, in the end) reads a tool execution error
			// that says which upstream and which limit.
			return &gateway.ToolResult{IsError: true, Content: []map[string]any{{"type": "text", "text": gateway.ErrorMessageOf(err)}}}, nil
		}
		return nil, err
	}
	res, err := decodeResult(raw)
	if err != nil {
		return nil, gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
			"upstream MCP server %s answered tools/call %s with a result that is not a CallToolResult: %v", a.display, call.Tool, err))
	}
	if res.Input == nil {
		return res, nil
	}
	if round == nil {
		return nil, gateway.Errorf(gateway.EUnavailable,
			"upstream MCP server %s asked for interactive input to run %s through an input-required result on a session-based protocol, which has no such result; configure the upstream tool to ask with elicitation, or call it at protocol 2026-07-28", a.display, call.Tool)
	}
	if err := input.InputRequired(ctx, res.Input.Requests); err != nil {
		return nil, err
	}
	return res, nil
}

// arguments returns the tools/call arguments as JSON: the client's bytes
// (call.RawArguments), so every number keeps every digit; a call built in
// Go (no RawArguments) has its Arguments encoded here, numbers that are
// json.Number with their text. Either way they are an object even when
// empty, because strict upstreams expect "arguments": {}.
func arguments(call gateway.ToolCall) (json.RawMessage, *gateway.Error) {
	if len(call.RawArguments) > 0 {
		return call.RawArguments, nil
	}
	if call.Arguments == nil {
		return json.RawMessage("{}"), nil
	}
	raw, err := json.Marshal(call.Arguments)
	if err != nil {
		return nil, gateway.Wrap(gateway.EInvalid, err, fmt.Sprintf(
			"arguments of %s cannot be encoded as JSON; send plain JSON values", call.Tool))
	}
	return raw, nil
}

// callBody is the tools/call request with id: name, the argument bytes as
// given, and _meta with the identity keys and, when progress is asked
// for, the progress token progressToken(id). A stateless call (round not
// nil) also carries the client's inputResponses and requestState, and in
// _meta the protocol version, the client capabilities the policy left and
// log level debug (the relay filters by the client's own level).
func callBody(id int64, call gateway.ToolCall, args json.RawMessage, progress bool, round *wire.InputRound, trace [2]string) []byte {
	b := make([]byte, 0, 160+len(call.Tool)+len(args)+len(call.WorkspaceID)+len(call.TaskID)+len(call.Actor))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = appendString(b, call.Tool)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	if round != nil {
		if len(round.Responses) > 0 {
			b = append(append(b, `,"inputResponses":`...), round.Responses...)
		}
		if len(round.State) > 0 {
			b = append(append(b, `,"requestState":`...), round.State...)
		}
	}
	b = append(b, `,"_meta":{`...)
	first := true
	if round != nil {
		caps := round.Capabilities
		if len(caps) == 0 {
			caps = json.RawMessage(`{}`)
		}
		b = append(b, `"`+metaProtocolVersion+`":"`+statelessVersion+`","`+metaLogLevel+`":"debug","`+metaClientCapabilities+`":`...)
		b = append(b, caps...)
		first = false
	}
	for _, kv := range [...][2]string{{MetaWorkspaceID, call.WorkspaceID}, {MetaTaskID, call.TaskID}, {MetaActor, call.Actor},
		{metaTraceparent, trace[0]}, {metaTracestate, trace[1]}} {
		if kv[1] == "" {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, kv[0])
		b = append(b, ':')
		b = appendString(b, kv[1])
	}
	if progress {
		if !first {
			b = append(b, ',')
		}
		b = append(b, `"progressToken":`...)
		b = append(b, progressToken(id)...)
	}
	return append(b, "}}}"...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// progressToken is the token the upstream gets for the call with request
// id: unique among the calls of every client sharing the session.
func progressToken(id int64) []byte {
	return strconv.AppendQuote([]byte(nil), "mcpgate-"+strconv.FormatInt(id, 10))
}

// ListTools returns every tool the upstream lists, following pagination
// cursors until the last page. Errors as for CallTool; tools/list has no side
// effects, so it is retried once on a fresh session after any transport
// failure.
//
// A tool whose x-mcp-header annotations break the rules of MCP 2026-07-28
// (wire.ParamHeaders) is left out, as the specification requires of a
// Streamable HTTP client (server/tools, "x-mcp-header"); Excluded tells
// which and why. The annotations of the others are kept for the
// Mcp-Param-* headers of stateless calls.
func (a *Adapter) ListTools(ctx context.Context) ([]UpstreamTool, error) {
	listed, err := a.listAll(ctx)
	if err != nil {
		return nil, err
	}
	tools := listed[:0]
	known := map[string][]wire.ParamHeader{}
	excluded := map[string]string{}
	for _, t := range listed {
		hs, err := wire.ParamHeaders(t.InputSchema)
		if err != nil {
			excluded[t.Name] = err.Error()
			continue
		}
		if len(hs) > 0 {
			known[t.Name] = hs
		}
		tools = append(tools, t)
	}
	a.annotations.Store(&known)
	a.mu.Lock()
	a.excluded = excluded
	a.mu.Unlock()
	return tools, nil
}

// Excluded returns the tools the last ListTools left out because of
// invalid x-mcp-header annotations, each with the reason, for the
// wiring's warning; nil when none.
func (a *Adapter) Excluded() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.excluded) == 0 {
		return nil
	}
	return maps.Clone(a.excluded)
}

// listAll walks every page of the upstream's tools/list.
func (a *Adapter) listAll(ctx context.Context) ([]UpstreamTool, error) {
	var tools []UpstreamTool
	cursor := ""
	for {
		raw, err := a.roundTrip(ctx, "tools/list", true, nil, func(id int64) []byte {
			params := "{}"
			if cursor != "" {
				params = `{"cursor":` + string(appendString(nil, cursor)) + `}`
			}
			return []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"tools/list","params":` + params + `}`)
		})
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []UpstreamTool `json:"tools"`
			NextCursor string         `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
				"upstream MCP server %s answered tools/list with a result that is not a ListToolsResult: %v", a.display, err))
		}
		tools = append(tools, page.Tools...)
		if page.NextCursor == "" {
			return tools, nil
		}
		cursor = page.NextCursor
	}
}

// Close ends the upstream sessions (HTTP DELETE). The Adapter must not be
// used afterwards.
func (a *Adapter) Close() error {
	a.mu.Lock()
	sessions := a.sessions
	a.sessions, a.closed = [sessionKinds]*upSession{}, true
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	for _, s := range sessions {
		if s == nil || s.id == "" {
			continue
		}
		s.stopListening()
		if err := a.deleteSession(ctx, s); err != nil {
			return gateway.Wrap(gateway.EUnavailable, a.scrub(err), fmt.Sprintf(
				"closing the session with upstream MCP server %s failed; the upstream will expire it", a.display))
		}
	}
	return nil
}
