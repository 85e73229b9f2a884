package mcp

import (
	"context"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// wireError turns an error into its JSON-RPC error object and HTTP status
// (wire.Error, the one mapping: docs/architecture.md, Conventions: "One
// error type, one writer") and logs it: errors of class Internal at error
// level with their cause (the caller sees only the message meant for
// people), everything else at debug.
func (t *Transport) wireError(ctx context.Context, err error) (*wire.ErrorObject, int) {
	e, status := wire.Error(err)
	switch {
	case wire.IsProtocolError(err):
		t.log.Debug("mcp: request refused", zap.String("request_id", gateway.RequestIDFrom(ctx)),
			zap.Int("status", status), zap.String("reason", e.Message))
	case e.Data.Class == string(gateway.EInternal):
		t.log.Error("mcp: internal error", zap.String("request_id", gateway.RequestIDFrom(ctx)), zap.Error(err))
	default:
		t.log.Debug("mcp: request failed", zap.String("request_id", gateway.RequestIDFrom(ctx)),
			zap.String("class", e.Data.Class), zap.String("message", e.Message))
	}
	return e, status
}

// challenge is the WWW-Authenticate value of a 401: Options.Challenge when
// set, else a Bearer challenge (RFC 6750 §3) naming the resource metadata
// (RFC 9728 §5.1) and, only when the request carried credentials, the
// invalid_token error with its message (RFC 6750 §3.1).
func (t *Transport) challenge(r *http.Request, err error) string {
	if t.opts.Challenge != nil {
		return t.opts.Challenge(err)
	}
	c := `Bearer realm="mcpgate"`
	if t.opts.ResourceMetadataURL != "" {
		c += `, resource_metadata=` + quoteHeader(t.opts.ResourceMetadataURL)
	}
	if r.Header.Get("Authorization") != "" {
		c += `, error="invalid_token", error_description=` + quoteHeader(gateway.ErrorMessageOf(err))
	}
	return c
}

// quoteHeader renders s as an HTTP quoted-string, dropping control
// characters so that an error message can never split a header.
func quoteHeader(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
