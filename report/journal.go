// Package report holds a campaign's session: the append-only journal of
// events and notes (JSON lines, fsynced before an event counts as recorded)
// and the markdown notebook rendered from it.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/profdeck/profdeck/phases"
)

// Journal is an append-only JSON-lines file of events.
type Journal struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenJournal opens (creating if needed) the journal at path for appending.
func OpenJournal(path string) (*Journal, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return &Journal{f: f, path: path}, nil
}

// Path is the journal's file name.
func (j *Journal) Path() string { return j.path }

// Append writes one event as a JSON line and fsyncs the file. Only when it
// returns nil is the event recorded.
func (j *Journal) Append(ev phases.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("journal %s: encode %s: %w", j.path, ev.Kind, err)
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: sync: %w", j.path, err)
	}
	return nil
}

// Close closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}

// ReadResult is a journal read back: its events, and what could not be read.
type ReadResult struct {
	Events []phases.Event
	// Skipped lists lines that were not valid events, with their line number.
	Skipped []string
	// TruncatedTail is true when the last line had no newline (a crash
	// mid-write); it is skipped and reported.
	TruncatedTail bool
}

// ReadJournal reads every event from r. Bad lines are skipped and reported,
// never fatal: a journal is read for what it holds.
func ReadJournal(r io.Reader) (ReadResult, error) {
	var res ReadResult
	br := bufio.NewReaderSize(r, 1<<16)
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			n++
			complete := line[len(line)-1] == '\n'
			line = bytes.TrimSpace(line)
			switch {
			case !complete:
				res.TruncatedTail = true
				res.Skipped = append(res.Skipped, fmt.Sprintf("line %d: incomplete last line (%d bytes) skipped", n, len(line)))
			case len(line) == 0:
			default:
				ev, derr := phases.Decode(line)
				if derr != nil {
					res.Skipped = append(res.Skipped, fmt.Sprintf("line %d: %v", n, derr))
				} else {
					res.Events = append(res.Events, ev)
				}
			}
		}
		if err == io.EOF {
			return res, nil
		}
		if err != nil {
			return res, err
		}
	}
}

// ReadJournalFile reads the journal at path.
func ReadJournalFile(path string) (ReadResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return ReadResult{}, err
	}
	defer f.Close()
	return ReadJournal(f)
}
