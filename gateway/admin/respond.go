package admin

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// apiFunc is a route handler that returns its error to the one writer.
type apiFunc func(w http.ResponseWriter, r *http.Request) error

// methods maps HTTP methods to the handlers of one path.
type methods map[string]apiFunc

// endpoint runs f and sends its error to the one writer. A read-only
// token caller reaches it only for GET (authenticate); scoped routes
// (under /workspaces/{ws}) then need the token's own workspace, other
// routes readerOK. A workspace admin reaches it only when adminOK (the
// route and method are in WorkspaceAdminRoutes) and, on scoped routes,
// for its own workspace.
func (h *handler) endpoint(f apiFunc, scoped, readerOK, adminOK bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wa, ok := workspaceAdminOf(r.Context()); ok {
			if err := wa.allows(r, scoped, adminOK); err != nil {
				h.writeError(w, r, err)
				return
			}
		}
		if ws, ok := readerWorkspace(r.Context()); ok && !readerOK {
			if !scoped {
				h.writeError(w, r, gateway.Errorf(gateway.EForbidden,
					"this API token can read only workspace %q (/admin/v1/workspaces/%s/…), its audit events and the OpenAPI description; this path needs %s",
					ws, ws, EnvAdminToken))
				return
			}
			if err := checkReader(r.Context(), mux.Vars(r)["ws"]); err != nil {
				h.writeError(w, r, err)
				return
			}
		}
		if err := f(w, r); err != nil {
			h.writeError(w, r, err)
		}
	})
}

// methodNotAllowed answers 405 with Allow for a path's other methods.
func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeErrorBody(w, http.StatusMethodNotAllowed, "MethodNotAllowed",
			"method "+r.Method+" is not allowed on this path; use "+allow)
	})
}

func (h *handler) noRoute(w http.ResponseWriter, r *http.Request) {
	h.writeError(w, r, notFound("no admin API route %s %q; see the routes in /admin/v1/openapi.yaml", r.Method, clip(r.URL.Path)))
}

// errorBody is the JSON shape of every error reply.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError is the one writer of errors: the status comes from
// wire.HTTPStatus (501 for a route the backend cannot
// answer, notImplemented); server-side failures are logged with their
// cause and answered with a generic message.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ni *notImplemented
	if errors.As(err, &ni) {
		writeErrorBody(w, http.StatusNotImplemented, "NotImplemented", ni.msg)
		return
	}
	code := gateway.ErrorCodeOf(err)
	status := wire.HTTPStatus(code)
	msg := gateway.ErrorMessageOf(err)
	if status >= http.StatusInternalServerError {
		h.log.Error("admin request failed", zap.String("method", r.Method),
			zap.String("path", r.URL.Path), zap.String("code", string(code)), zap.Error(err))
		msg = "internal error; the gateway logged the cause — check its logs, then retry"
	}
	if code == gateway.EUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpgate-admin"`)
	}
	writeErrorBody(w, status, string(code), msg)
}

func writeErrorBody(w http.ResponseWriter, status int, code, msg string) {
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

// writeJSON writes v; an encoding failure can only be a bug in a response
// type, and the status is already sent, so it is ignored.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func invalid(format string, args ...any) error {
	return gateway.Errorf(gateway.EInvalid, format, args...)
}

func notFound(format string, args ...any) error {
	return gateway.Errorf(gateway.ENotFound, format, args...)
}

// clip shortens caller-supplied text repeated in a message.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
