// Command benchupstream is the upstream `make bench-compare` puts behind the
// gateway: an MCP server on the official Go SDK with one tool, echo, that
// answers as cheaply as the SDK allows (application/json replies instead of
// an SSE stream per call), so that what the benchmark measures is the
// gateway and not the tool.
//
//	benchupstream -addr 127.0.0.1:0
//
// It prints "benchupstream listening on http://HOST:PORT/mcp" on stdout once
// it accepts connections, and stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the one tool the server lists.
const ToolName = "echo"

var (
	inputSchema  = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)
	outputSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
)

// echoArgs are echo's arguments and its structured result.
type echoArgs struct {
	Text string `json:"text"`
}

// newServer returns the MCP server with the echo tool. The tool is added
// with the raw handler (Server.AddTool), which skips the SDK's schema
// inference and validation of typed handlers: the gateway has already
// validated the arguments against inputSchema, and a direct client sends
// valid ones.
func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "benchupstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{
		Name:         ToolName,
		Description:  "Returns its text argument, as text content and as structured content.",
		InputSchema:  inputSchema,
		OutputSchema: outputSchema,
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, echo)
	return s
}

func echo(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args echoArgs
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, fmt.Errorf("echo: arguments: %w", err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: args.Text}},
		StructuredContent: args,
	}, nil
}

// Handler serves the server over Streamable HTTP: stateful sessions (as a
// deployed server, and as the gateway's upstream adapter expects) with JSON
// replies. stateless switches to the SDK's stateless mode.
func Handler(stateless bool) http.Handler {
	s := newServer()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{JSONResponse: true, Stateless: stateless, SessionTimeout: 10 * time.Minute})
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address, host:port (port 0 picks a free one)")
	stateless := flag.Bool("stateless", false, "serve in the SDK's stateless mode (no sessions)")
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", Handler(*stateless))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("benchupstream listening on http://%s/mcp\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
