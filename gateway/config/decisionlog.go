package config

import (
	"net/url"
	"time"
)

// DecisionLog configures the decision log: one event per tools/call
// decision in OPA's decision-log format, masked by the bundle's
// data.system.log.mask, to a JSONL file and/or an OPA-compatible HTTP
// service (both may be on). Neither set: no decision log, and decisions
// cost nothing more.
type DecisionLog struct {
	// File is MCPGATE_DECISION_LOG_FILE: a file the gateway appends one
	// event per line to (created with mode 0600).
	File string
	// URL is MCPGATE_DECISION_LOG_URL: the http(s) URL of a service that
	// takes OPA's decision log uploads, as OPA's services[].url; events
	// are POSTed to its /logs as gzip-compressed JSON arrays.
	URL string
	// BufferEvents is MCPGATE_DECISION_LOG_BUFFER_EVENTS (default 10000):
	// events waiting to be masked and written; beyond it events are
	// dropped and counted, never waited for.
	BufferEvents int
	// BufferBytes is MCPGATE_DECISION_LOG_BUFFER_BYTES (default 32 MiB):
	// encoded events waiting for an upload to URL; beyond it the oldest
	// are dropped and counted.
	BufferBytes int64
	// Interval is MCPGATE_DECISION_LOG_INTERVAL (default 5s): the longest
	// an event waits before its batch is uploaded.
	Interval time.Duration
}

// On reports whether a decision log sink is configured.
func (d DecisionLog) On() bool { return d.File != "" || d.URL != "" }

func (c *Config) loadDecisionLog(r *reader) {
	c.DecisionLog = DecisionLog{
		File:         r.getenv("MCPGATE_DECISION_LOG_FILE"),
		URL:          r.getenv("MCPGATE_DECISION_LOG_URL"),
		BufferEvents: r.positive("MCPGATE_DECISION_LOG_BUFFER_EVENTS", 10000),
		BufferBytes:  int64(r.positive("MCPGATE_DECISION_LOG_BUFFER_BYTES", 32<<20)),
		Interval:     r.duration("MCPGATE_DECISION_LOG_INTERVAL", 5*time.Second),
	}
	if u := c.DecisionLog.URL; u != "" {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			// The value is not repeated: its password may be a key.
			r.fail("MCPGATE_DECISION_LOG_URL: want the http:// or https:// URL of a decision log service, as OPA's services[].url (events go to its /logs); the value starts %q", scheme(u))
		}
	}
}
