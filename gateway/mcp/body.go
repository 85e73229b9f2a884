package mcp

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// readBody reads at most MaxBodyBytes; a larger body is HTTP 413, a body
// that does not arrive within the server's body deadline HTTP 408. The
// body is charged to MaxHeldBodyBytes (its Content-Length, or
// MaxBodyBytes when the length is unknown, while it is read; then its
// size) until the caller calls release, exactly once, when the body's
// requests are done; on an error nothing stays charged. With the budget
// spent the POST is refused at once with HTTP 503.
func (t *Transport) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	charge := t.opts.MaxBodyBytes
	if r.ContentLength >= 0 && r.ContentLength < charge {
		charge = max(r.ContentLength, 1)
	}
	if !t.bodies.TryAcquire(charge) {
		w.Header().Set("Retry-After", "1")
		return nil, nil, wire.ErrStatus(http.StatusServiceUnavailable, gateway.EUnavailable,
			"the gateway already holds %d bytes of unanswered request bodies, its limit (MCPGATE_MAX_HELD_BODY_BYTES); retry in a moment", t.opts.MaxHeldBodyBytes)
	}
	body, err = readBodyBytes(http.MaxBytesReader(w, r.Body, t.opts.MaxBodyBytes), r.ContentLength, t.opts.MaxBodyBytes)
	var tooBig *http.MaxBytesError
	var nerr net.Error
	switch {
	case errors.As(err, &tooBig):
		err = wire.ErrStatus(http.StatusRequestEntityTooLarge, gateway.EInvalid,
			"request body exceeds %d bytes; send smaller messages", t.opts.MaxBodyBytes)
	case errors.As(err, &nerr) && nerr.Timeout():
		err = wire.ErrStatus(http.StatusRequestTimeout, gateway.EInvalid,
			"the request body did not arrive in time; send the whole body right after the headers")
	case err != nil:
		err = wire.ErrInvalidRequest("could not read the request body: %v", err)
	}
	if err != nil {
		t.bodies.Release(charge)
		return nil, nil, err
	}
	held := max(int64(len(body)), 1)
	if held < charge {
		t.bodies.Release(charge - held) // a Content-Length larger than the body, or unknown
	}
	held = min(held, charge)
	var once sync.Once
	return body, func() { once.Do(func() { t.bodies.Release(held) }) }, nil
}

// readBodyBytes is io.ReadAll(r) into a buffer sized for the body's declared
// length (when it is known and within limit), which then never grows.
func readBodyBytes(r io.Reader, length, limit int64) ([]byte, error) {
	if length < 0 || length > limit {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, length+1) // one byte more, for the read that meets the end
	for len(b) < cap(b) {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	rest, err := io.ReadAll(r) // longer than declared
	return append(b, rest...), err
}
