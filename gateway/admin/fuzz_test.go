package admin

import (
	"net/url"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// FuzzAuditCursor checks the audit listing cursor both ways: any cursor
// the API accepts is the one it would write for the position it reads
// (so it round-trips), in range, and the same through the query parser;
// anything else is an EInvalid error. And every position of an event
// between 1970 and 9999 encodes to a cursor that reads back as it.
func FuzzAuditCursor(f *testing.F) {
	for _, p := range []gateway.AuditPosition{
		{Time: time.UnixMicro(1700000000123456), ID: 42},
		{Time: time.UnixMicro(0), ID: 1},
		{Time: time.UnixMicro(maxCursorMicros), ID: 1<<63 - 1},
	} {
		f.Add(encodeCursor(p), p.Time.UnixMicro(), p.ID)
	}
	for _, s := range []string{"", "MTcwMDAwMDAwMDEyMzQ1Ni40Mg==", "KzE3MDAwMDAwMDAuNDI" /* +1700000000.42 */, "LTEuMQ", /* -1.1 */
		"MS4w" /* 1.0 */, "MS4", "MQ", "not a cursor", "Li4"} {
		f.Add(s, int64(-1), int64(0))
	}
	f.Fuzz(func(t *testing.T, cursor string, micros, id int64) {
		p, err := decodeCursor(cursor)
		f, ferr := auditFilter(url.Values{"cursor": {cursor}})
		if cursor == "" {
			// No cursor: the query parser starts from the newest event.
			if ferr != nil || !f.Before.IsZero() {
				t.Fatalf("empty cursor: filter %+v, %v", f, ferr)
			}
		} else if (err == nil) != (ferr == nil) || err == nil && f.Before != p {
			t.Fatalf("cursor %q: decodeCursor %+v, %v; auditFilter %+v, %v", cursor, p, err, f.Before, ferr)
		}
		if err != nil {
			if gateway.ErrorCodeOf(err) != gateway.EInvalid {
				t.Fatalf("cursor %q refused with %v, want EInvalid", cursor, err)
			}
		} else {
			us := p.Time.UnixMicro()
			if p.ID <= 0 || us < 0 || us > maxCursorMicros || p.Time.Location() != time.UTC {
				t.Fatalf("cursor %q accepted as out-of-range position %+v", cursor, p)
			}
			if again := encodeCursor(p); again != cursor {
				t.Fatalf("cursor %q reads as %+v, which encodes as %q", cursor, p, again)
			}
		}

		pos := gateway.AuditPosition{Time: time.UnixMicro(micros), ID: id}
		back, err := decodeCursor(encodeCursor(pos))
		inRange := micros >= 0 && micros <= maxCursorMicros && id > 0
		switch {
		case inRange && (err != nil || !back.Time.Equal(pos.Time) || back.ID != id):
			t.Fatalf("position %+v encodes to %q, which reads as %+v, %v", pos, encodeCursor(pos), back, err)
		case !inRange && err == nil:
			t.Fatalf("out-of-range position %+v encodes to %q, which is accepted as %+v", pos, encodeCursor(pos), back)
		}
	})
}
