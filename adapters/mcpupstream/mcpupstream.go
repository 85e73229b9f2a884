// Package mcpupstream forwards allowed tools/call requests to an upstream MCP
// server over Streamable HTTP, using the official MCP Go SDK client.
//
// One Adapter keeps one client session with the upstream and shares it
// between concurrent calls. When the session is lost (the upstream restarted
// and answers 404 for the old session, or it was unreachable for a while) the
// next call opens a new session transparently; see Adapter.CallTool for when
// a call is retried.
package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
)

// Options configures an Adapter. The zero value is usable.
type Options struct {
	// HTTPClient sends the HTTP requests; nil means a client of its own
	// with http.DefaultTransport's settings that keeps up to MaxIdleConns
	// idle connections to the upstream. Do not set its Timeout: per-call
	// deadlines come from Timeout.
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
	// (e.g. "2025-11-25"); empty offers the SDK's latest and lets the server
	// negotiate.
	ProtocolVersion string
}

// UpstreamTool is one tool the upstream lists: its name, description and
// input JSON Schema exactly as the upstream sent it.
type UpstreamTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Adapter forwards tool calls to one upstream MCP server. It is safe for
// concurrent use; create it with New and release it with Close.
type Adapter struct {
	url       string
	display   string            // url without password or query values, for messages
	secrets   *strings.Replacer // secretReplacer(url), for the errors of the SDK
	flights   flights
	client    *mcp.Client
	transport *mcp.StreamableClientTransport
	timeout   time.Duration
	sessOpts  *mcp.ClientSessionOptions

	mu      sync.Mutex
	session *mcp.ClientSession // nil when no live session
	closed  bool
	closing sync.WaitGroup // background closes of dropped sessions
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
	a := &Adapter{
		url:      rawURL,
		display:  DisplayURL(rawURL),
		secrets:  secretReplacer(rawURL),
		client:   mcp.NewClient(implementation(opts), &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}),
		timeout:  opts.Timeout,
		sessOpts: &mcp.ClientSessionOptions{ProtocolVersion: opts.ProtocolVersion},
	}
	if a.timeout <= 0 {
		a.timeout = DefaultTimeout
	}
	a.transport = &mcp.StreamableClientTransport{
		Endpoint:   rawURL,
		HTTPClient: withHeaders(opts.HTTPClient, opts.Header),
		// The gateway only relays request/response pairs; server-initiated
		// messages have nobody to go to, and a standing GET stream would only
		// add a second way for the session to break.
		DisableStandaloneSSE: true,
		// Retries of broken response streams are not ours to hide: a tool
		// call either answered or the caller gets EUnavailable.
		MaxRetries: -1,
	}
	if _, err := a.currentSession(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// DisplayURL is rawURL fit for error messages, logs and banners, which
// reach clients and the idempotency store: the password and every query
// value (which may carry an API key) replaced by "xxxxx", a query key
// without a value (which may be the key itself) too, and the fragment
// left out (seed 001, Security properties: no secret exposure). A URL that
// does not parse is "(unparsable URL)".
func DisplayURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.RawQuery != "" {
		q := url.Values{}
		for k, vs := range u.Query() {
			for _, v := range vs {
				if v == "" {
					q.Add(redacted, redacted) // a bare key may be the secret itself
				} else {
					q.Add(k, redacted)
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment = ""
	return u.Redacted()
}

// redacted stands for a secret in DisplayURL (the same as url.URL.Redacted).
const redacted = "xxxxx"

// secretReplacer replaces, in any text, the parts of rawURL that may be
// secrets: the whole URL by DisplayURL, and its raw query, each query
// value (as sent and as decoded) and the password by "xxxxx". Errors of
// the HTTP client and of the MCP SDK quote the request URL; they pass
// through it before they are wrapped (scrub).
func secretReplacer(rawURL string) *strings.Replacer {
	pairs := []string{rawURL, DisplayURL(rawURL)}
	u, err := url.Parse(rawURL)
	if err != nil {
		return strings.NewReplacer(pairs...)
	}
	secrets := []string{u.RawQuery}
	for _, vs := range u.Query() {
		for _, v := range vs {
			secrets = append(secrets, v, url.QueryEscape(v))
		}
	}
	if pw, ok := u.User.Password(); ok {
		secrets = append(secrets, pw, url.QueryEscape(pw), url.PathEscape(pw))
	}
	// Longest first, so that a secret inside another is not half replaced;
	// very short values (a flag such as "1") are not worth garbling text.
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
			"upstream MCP URL %q is not an absolute http(s) URL; set MCPGATE_UPSTREAM_URL to e.g. https://tools.internal/mcp", DisplayURL(rawURL))
	}
	return nil
}

func implementation(opts Options) *mcp.Implementation {
	impl := &mcp.Implementation{Name: opts.ClientName, Version: opts.ClientVersion}
	if impl.Name == "" {
		impl.Name = DefaultClientName
	}
	if impl.Version == "" {
		impl.Version = DefaultClientVersion
	}
	return impl
}

// URL returns the upstream endpoint this adapter forwards to.
func (a *Adapter) URL() string { return a.display }

// CallTool forwards call to the upstream as tools/call: the tool name and
// arguments unchanged (the client's bytes, see callParams), and the credential's workspace, task and actor in the
// request _meta under MetaWorkspaceID, MetaTaskID and MetaActor (empty values
// are left out). The upstream's CallToolResult is mapped field by field:
// content blocks as their JSON objects, an object structuredContent as
// StructuredContent, isError as IsError, so tool errors pass through as
// results.
//
// A call is sent again, once, on a fresh session only when the first attempt
// provably never reached a tool handler: the connection could not be
// dialled, or the upstream answered 404 for a lost session (or the session
// was already closed) while no other request of the adapter was in flight.
// Any other failure is not retried, because tools/call may have side
// effects; errors that prove the tool never ran are marked
// gateway.ErrNotDispatched.
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
	params, perr := callParams(call)
	if perr != nil {
		return nil, notDispatched(perr)
	}
	var res *mcp.CallToolResult
	err := a.do(ctx, "tools/call "+call.Tool, false, func(ctx context.Context, s *mcp.ClientSession) error {
		var err error
		res, err = s.CallTool(ctx, params)
		return err
	})
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return nil, gateway.Errorf(gateway.EUnavailable,
			"upstream MCP server %s asked for interactive input to run %s, which the gateway cannot provide; configure the upstream tool to run without elicitation", a.display, call.Tool)
	}
	return mapResult(res)
}

// callParams builds the tools/call params. The arguments are the client's
// bytes (call.RawArguments), so every number keeps every digit; a call
// built in Go (no RawArguments) has its Arguments encoded here, numbers
// that are json.Number with their text. Either way they are sent as an
// object even when empty, because the SDK leaves out an empty map and
// strict upstreams expect "arguments": {}.
func callParams(call gateway.ToolCall) (*mcp.CallToolParams, *gateway.Error) {
	if len(call.RawArguments) > 0 {
		return &mcp.CallToolParams{Name: call.Tool, Arguments: call.RawArguments, Meta: callMeta(call)}, nil
	}
	args := call.Arguments
	if args == nil {
		args = map[string]any{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, gateway.Wrap(gateway.EInvalid, err, fmt.Sprintf(
			"arguments of %s cannot be encoded as JSON; send plain JSON values", call.Tool))
	}
	return &mcp.CallToolParams{Name: call.Tool, Arguments: json.RawMessage(raw), Meta: callMeta(call)}, nil
}

func callMeta(call gateway.ToolCall) mcp.Meta {
	meta := mcp.Meta{}
	for k, v := range map[string]string{
		MetaWorkspaceID: call.WorkspaceID,
		MetaTaskID:      call.TaskID,
		MetaActor:       call.Actor,
	} {
		if v != "" {
			meta[k] = v
		}
	}
	return meta
}

// ListTools returns every tool the upstream lists, following pagination
// cursors until the last page. Errors as for CallTool; tools/list has no side
// effects, so it is retried once on a fresh session after any transport
// failure.
func (a *Adapter) ListTools(ctx context.Context) ([]UpstreamTool, error) {
	var tools []UpstreamTool
	err := a.do(ctx, "tools/list", true, func(ctx context.Context, s *mcp.ClientSession) error {
		tools = tools[:0]
		for t, err := range s.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			ut, err := toUpstreamTool(t)
			if err != nil {
				return err
			}
			tools = append(tools, ut)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tools, nil
}

func toUpstreamTool(t *mcp.Tool) (UpstreamTool, error) {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return UpstreamTool{}, fmt.Errorf("encoding input schema of %s: %w", t.Name, err)
	}
	return UpstreamTool{Name: t.Name, Description: t.Description, InputSchema: schema}, nil
}

// Close ends the upstream session and waits for sessions dropped earlier to
// finish closing. The Adapter must not be used afterwards.
func (a *Adapter) Close() error {
	a.mu.Lock()
	s := a.session
	a.session, a.closed = nil, true
	a.mu.Unlock()
	var err error
	if s != nil {
		err = s.Close()
	}
	a.closing.Wait()
	if err != nil && !errors.Is(err, mcp.ErrSessionMissing) {
		return gateway.Wrap(gateway.EUnavailable, a.scrub(err), fmt.Sprintf(
			"closing the session with upstream MCP server %s failed; the upstream will expire it", a.display))
	}
	return nil
}
