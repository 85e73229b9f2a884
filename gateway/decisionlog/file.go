package decisionlog

import (
	"bufio"
	"fmt"
	"os"

	"go.uber.org/zap"
)

// fileSink appends one event per line to a file (JSON Lines). Only the
// logger's worker writes to it.
type fileSink struct {
	l       *Logger
	f       *os.File
	w       *bufio.Writer
	pending int // lines written to w since the last flush
}

func openFileSink(path string, l *Logger) (*fileSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("MCPGATE_DECISION_LOG_FILE: cannot open %s for appending: %w", path, err)
	}
	return &fileSink{l: l, f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (s *fileSink) write(line []byte) {
	_, err := s.w.Write(line)
	if err == nil {
		err = s.w.WriteByte('\n')
	}
	if err != nil {
		s.failed(err, s.pending+1) // the buffer, with this line, is lost
		return
	}
	s.pending++
}

// flush writes the buffered lines to the file and counts them sent.
func (s *fileSink) flush() {
	if s.pending == 0 {
		return
	}
	if err := s.w.Flush(); err != nil {
		s.failed(err, s.pending)
		return
	}
	s.l.stats.DecisionLogSent(SinkFile, s.pending)
	s.pending = 0
}

// failed counts the lost lines and starts a fresh buffer, so one failure
// does not stop later writes.
func (s *fileSink) failed(err error, lost int) {
	s.l.stats.DecisionLogFailed(SinkFile)
	s.l.stats.DecisionLogDropped(DropFileFailed, lost)
	s.pending = 0
	s.w.Reset(s.f)
	s.l.warn("file", "decision log events dropped: the file sink could not write them; check MCPGATE_DECISION_LOG_FILE's disk and permissions",
		zap.String("file", s.f.Name()), zap.Error(err))
}

func (s *fileSink) close() error {
	s.flush()
	if err := s.f.Sync(); err != nil {
		_ = s.f.Close()
		return fmt.Errorf("decision log file %s: %w", s.f.Name(), err)
	}
	return s.f.Close()
}
