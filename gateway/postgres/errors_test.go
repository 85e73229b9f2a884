package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/internal/sqlcore"
)

func TestTranslate(t *testing.T) {
	m := sqlcore.Msgs{NotFound: "workspace ws-9 not found; create it", Conflict: "slug taken; choose another"}
	for _, tc := range []struct {
		name    string
		err     error
		code    gateway.ErrorCode
		message string // substring of the message for people
	}{
		{"nil", nil, "", ""},
		{"gateway error passes through", gateway.Errorf(gateway.EForbidden, "no"), gateway.EForbidden, "no"},
		{"no rows", fmt.Errorf("scan: %w", sql.ErrNoRows), gateway.ENotFound, "ws-9 not found"},
		{"unique", &pq.Error{Code: pqerror.UniqueViolation}, gateway.EConflict, "slug taken"},
		{"foreign key", &pq.Error{Code: pqerror.ForeignKeyViolation}, gateway.ENotFound, "ws-9 not found"},
		{"named check", &pq.Error{Code: pqerror.CheckViolation, Constraint: "members_role_check"}, gateway.EInvalid, "owner, admin, member, viewer"},
		{"unnamed check", &pq.Error{Code: pqerror.CheckViolation, Constraint: "x_check"}, gateway.EInvalid, "x_check"},
		{"bad json", &pq.Error{Code: "22P02", Message: "invalid input syntax for type json"}, gateway.EInvalid, "invalid value"},
		{"connection failure", &pq.Error{Code: "08006"}, gateway.EUnavailable, "audit store unavailable"},
		{"too many connections", &pq.Error{Code: pqerror.TooManyConnections}, gateway.EUnavailable, "audit store unavailable"},
		{"admin shutdown", &pq.Error{Code: pqerror.AdminShutdown}, gateway.EUnavailable, "audit store unavailable"},
		{"network", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, gateway.EUnavailable, "audit store unavailable"},
		{"bad conn", driver.ErrBadConn, gateway.EUnavailable, "audit store unavailable"},
		{"deadline", context.DeadlineExceeded, gateway.EUnavailable, "audit store unavailable"},
		{"syntax error is ours", &pq.Error{Code: "42601"}, gateway.EInternal, "logged the cause"},
		{"anything else", errors.New("boom"), gateway.EInternal, "logged the cause"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := translate(tc.err, m)
			if code := gateway.ErrorCodeOf(got); code != tc.code {
				t.Fatalf("code %q, want %q (err %v)", code, tc.code, got)
			}
			if tc.err != nil && !errors.Is(got, tc.err) {
				t.Errorf("translated error %v lost its cause %v", got, tc.err)
			}
			if msg := gateway.ErrorMessageOf(got); tc.err != nil && !strings.Contains(msg, tc.message) {
				t.Errorf("message %q does not contain %q", msg, tc.message)
			}
		})
	}
}

// A URL lib/pq cannot parse is refused without repeating it: the password
// (here one with a stray %) stays out of the error.
func TestBadURLHidesThePassword(t *testing.T) {
	_, err := Open(context.Background(), "postgres://mcpgate:SECRET%zzPW@127.0.0.1:1/x")
	if gateway.ErrorCodeOf(err) != gateway.EInvalid {
		t.Fatalf("bad URL: %v, want EInvalid", err)
	}
	for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err)} {
		if strings.Contains(text, "SECRET") {
			t.Fatalf("the error shows the password: %s", text)
		}
	}
}
