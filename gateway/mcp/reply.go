package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// format is how a POST's JSON-RPC responses are sent back.
type format int

const (
	formatJSON format = iota // Content-Type: application/json
	formatSSE                // Content-Type: text/event-stream, one event per response
)

// acceptable parses an Accept header into what it allows. A missing header
// allows anything. Media ranges with q=0 are refused ranges (RFC 9110 §12.5.1).
func acceptable(values []string) (jsonOK, sseOK bool) {
	if len(values) == 0 {
		return true, true
	}
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			typ, params, _ := strings.Cut(part, ";")
			if refused(params) {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(typ)) {
			case "*/*":
				jsonOK, sseOK = true, true
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			}
		}
	}
	return jsonOK, sseOK
}

// refused reports whether media-range parameters carry q=0.
func refused(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}

// replyFormat picks the format of a POST reply: JSON whenever the client
// accepts it (the usual "application/json, text/event-stream"), SSE when it
// accepts only event streams, and ok=false (406) when it accepts neither.
func replyFormat(r *http.Request) (f format, ok bool) {
	jsonOK, sseOK := acceptable(r.Header.Values("Accept"))
	switch {
	case jsonOK:
		return formatJSON, true
	case sseOK:
		return formatSSE, true
	default:
		return 0, false
	}
}

// writeJSON sends v, a value of this package that always encodes, as a
// JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// startSSE writes the headers of an event stream: no caching or transforming
// proxies, no nginx buffering, so each event reaches the client when flushed.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// writeEvent sends one event (name "message" for a JSON-RPC message,
// "endpoint" for the 2024-11-05 endpoint) and flushes it, so every event
// reaches the client when written. data never holds a raw newline
// (json.Marshal escapes them; an endpoint is a URL), so one data line holds
// it.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, name string, data []byte) error {
	buf := make([]byte, 0, len(name)+len(data)+len("event: \ndata: \n\n"))
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	return rc.Flush()
}

// writeResponses sends the encoded responses of one POST in format f: a
// single object, a JSON array for a batch, or one SSE event per response.
func writeResponses(w http.ResponseWriter, f format, batch bool, encoded [][]byte) {
	if f == formatJSON {
		if !batch {
			writeBody(w, http.StatusOK, encoded[0])
			return
		}
		body := append([]byte{'['}, bytes.Join(encoded, []byte{','})...)
		writeBody(w, http.StatusOK, append(body, ']'))
		return
	}
	startSSE(w)
	rc := http.NewResponseController(w)
	for _, data := range encoded {
		if writeEvent(w, rc, "message", data) != nil {
			return // the client is gone; nothing left to tell it
		}
	}
}
