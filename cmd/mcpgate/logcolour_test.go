package main

import (
	"os"
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

// make run's console log, written to a file as a pipe would take it: a
// warning is one line, without zap's development stack trace (the audit
// signing key's warning at start printed twenty lines of Go frames), and
// without colour codes; an error still carries its stack.
func TestConsoleLogWarningIsOneLine(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = f
	log, err := newLogger("console")
	os.Stderr = stderr
	if err != nil {
		t.Fatal(err)
	}
	log.Warn("a warning")
	_ = log.Sync()
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "WARN") {
		t.Errorf("console warning: %q, want one WARN line", out)
	}
	if strings.Contains(string(out), "\x1b[") {
		t.Errorf("console warning to a file: %q, want no escape codes", out)
	}
	log.Error("an error")
	_ = log.Sync()
	out, _ = os.ReadFile(f.Name())
	if !strings.Contains(string(out), "TestConsoleLogWarningIsOneLine") {
		t.Errorf("console error: %q, want its stack trace", out)
	}
}
