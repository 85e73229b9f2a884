package main

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
)

// Item 6 of issue 30: console logs carry ANSI colour codes only when they
// go to a terminal; a file or a pipe gets plain text.
func TestLogsNoColourOffTerminal(t *testing.T) {
	line := func(colour bool) string {
		enc := zapcore.NewConsoleEncoder(consoleEncoderConfig(colour))
		buf, err := enc.EncodeEntry(zapcore.Entry{Level: zapcore.InfoLevel, Time: time.Unix(0, 0), Message: "hello"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if got := line(false); strings.Contains(got, "\x1b[") || !strings.Contains(got, "INFO") {
		t.Errorf("not a terminal: %q, want INFO without escape codes", got)
	}
	if got := line(true); !strings.Contains(got, "\x1b[") {
		t.Errorf("terminal: %q, want a coloured level", got)
	}
}
