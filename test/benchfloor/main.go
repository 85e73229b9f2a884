// Command benchfloor is the "floor" that `make bench-compare` measures the
// gateway against: the least a Go net/http gateway adds to an MCP call on
// this machine when it does the gateway's two store round trips and
// nothing else. It is benchmark-only code, not a gateway: no
// authentication, no policy, no limits, no MCP parsing beyond one cheap
// test of the body.
//
//	benchfloor -listen 127.0.0.1:0 -upstream http://127.0.0.1:8090/mcp -store none
//	benchfloor ... -store sqlite -sqlite-path /tmp/floor.db
//	benchfloor ... -store postgres -dsn postgres://…/bench_floor_x?sslmode=disable
//
// Every request, whatever its path, is forwarded to -upstream: its method,
// its exact body bytes and the MCP headers (forwardedHeaders); the
// upstream's status, the same headers (Mcp-Session-Id among them) and its
// body bytes are copied back. The upstream client is an http.Client over a
// clone of http.DefaultTransport with MaxIdleConnsPerHost 256. Both bodies
// are read whole before they are passed on (a gateway reads the call before
// it decides, and test/benchupstream answers application/json), so an SSE
// stream is not relayed as it comes.
//
// With -store sqlite or postgres, a POST whose body is a JSON-RPC
// tools/call (the body holds `"method":"tools/call"`) is what the gateway
// does for an allowed call, reduced to its store writes: before the
// forward, one row is inserted into a table of its own (floorTable) and
// committed synchronously, and its id read back; after the upstream
// answered and before the reply, that row is updated by id with the
// outcome and the upstream's latency; on PostgreSQL that update commits
// asynchronously (synchronous_commit off for the one statement, as the
// gateway's finish). A store write that fails answers HTTP 500 and, before
// the forward, the call is not forwarded (the gateway fails closed too).
//
// It prints "benchfloor listening on http://HOST:PORT/mcp" on stdout once
// it accepts connections, and stops on SIGTERM or SIGINT.
package main

import (
	"context"
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
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address, host:port (port 0 picks a free one)")
	upstream := flag.String("upstream", "", "the upstream's MCP endpoint URL, e.g. http://127.0.0.1:8090/mcp (required)")
	storeKind := flag.String("store", storeNone, "what each tools/call writes: none, sqlite (-sqlite-path) or postgres (-dsn)")
	dsn := flag.String("dsn", "", "with -store postgres: the database URL, e.g. postgres://user:pass@127.0.0.1:5432/db?sslmode=disable")
	sqlitePath := flag.String("sqlite-path", "", "with -store sqlite: the database file (created if missing)")
	flag.Parse()
	if *upstream == "" {
		log.Fatal("benchfloor: -upstream is required (the upstream's MCP endpoint URL)")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	st, err := openStore(ctx, *storeKind, *dsn, *sqlitePath)
	if err != nil {
		log.Fatalf("benchfloor: %v", err)
	}
	if st != nil {
		defer st.Close()
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("benchfloor: %v", err)
	}
	srv := &http.Server{Handler: newFloor(*upstream, st), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("benchfloor listening on http://%s/mcp\n", ln.Addr())

	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("benchfloor: %v", err)
	}
}
