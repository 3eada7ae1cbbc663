// Package report holds a campaign's session: the append-only journal of
// events and notes (JSON lines, fsynced before an event counts as recorded),
// the markdown notebook rendered from it with its charts, the decode-time
// budget, autosave, and the headless report and compare commands.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/localfs"
)

// Journal is an append-only JSON-lines file of events.
type Journal struct {
	mu    sync.Mutex
	f     *os.File
	path  string
	prior ReadResult
	// torn is set when a write failed: the file may end in part of a
	// line, so the next event starts with a newline of its own rather
	// than being glued to the broken line and lost with it.
	torn bool
}

// OpenJournal opens (creating if needed) the journal at path for appending.
// The events already in it are read first (see Prior), so that a campaign
// resumed after a quit or a crash keeps its whole notebook. A journal left
// by a crash may end in half a line: a newline is written first so that the
// next event starts on a line of its own and the broken line stays a single,
// skipped line.
func OpenJournal(path string) (*Journal, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	statErr := localfs.CheckInput(path)
	created := os.IsNotExist(statErr)
	if statErr != nil && !created {
		return nil, fmt.Errorf("journal %w", statErr) // a FIFO or /dev/zero would hang the read
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	var prior ReadResult
	if !created {
		if prior, err = ReadJournal(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
	}
	if err := repairTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if created {
		// Make the new file's directory entry durable too.
		localfs.SyncDir(dir)
	}
	return &Journal{f: f, path: path, prior: prior}, nil
}

// Prior is what the journal held when it was opened: its events, and the
// lines that could not be read (such as a line cut off by a crash).
func (j *Journal) Prior() ReadResult { return j.prior }

// repairTail appends a newline when the file's last byte is not one.
func repairTail(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return err
	}
	return f.Sync()
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
	if j.f == nil {
		return fmt.Errorf("journal %s: closed", j.path)
	}
	if j.torn {
		b = append([]byte{'\n'}, b...)
	}
	if _, err := j.f.Write(b); err != nil {
		j.torn = true
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	j.torn = false
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: sync: %w", j.path, err)
	}
	return nil
}

// Close closes the file. Appending afterwards is an error.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// ReadResult is a journal read back: its events, and what could not be read.
type ReadResult struct {
	Events []phases.Event
	// Skipped describes the first MaxSkippedShown lines that were not valid
	// events, with their line number; SkippedCount counts them all.
	Skipped      []string
	SkippedCount int
	// TruncatedTail is true when the last line had no newline (a crash
	// mid-write); it is skipped and reported.
	TruncatedTail bool
}

const (
	// MaxJournalLine is the longest journal line read; a longer one is
	// skipped without being held.
	MaxJournalLine = 8 << 20
	// MaxJournalBytes and MaxJournalEvents bound the events a journal
	// holds (a campaign's are well under 1 MiB; lines skipped do not
	// count): past either, it is refused rather than held in unbounded
	// memory.
	MaxJournalBytes  = 32 << 20
	MaxJournalEvents = 200_000
	// MaxSkippedShown is how many skipped lines are described; the rest
	// are counted.
	MaxSkippedShown = 5
	maxSkipText     = 200
)

func (res *ReadResult) skip(n int, format string, a ...any) {
	res.SkippedCount++
	if len(res.Skipped) < MaxSkippedShown {
		msg := fmt.Sprintf("line %d: ", n) + fmt.Sprintf(format, a...)
		if len(msg) > maxSkipText {
			msg = strings.ToValidUTF8(msg[:maxSkipText], "") + "…"
		}
		res.Skipped = append(res.Skipped, msg)
	}
}

// ReadJournal reads every event from r. Bad lines are skipped and counted,
// never fatal: a journal is read for what it holds. Lines are bounded
// (MaxJournalLine), so any input is read in bounded memory.
func ReadJournal(r io.Reader) (ReadResult, error) {
	return readJournal(r, nil)
}

// readJournal is ReadJournal keeping only the events keep accepts (all
// when nil); the rest are read past without decoding their payload.
func readJournal(r io.Reader, keep func(phase, kind string) bool) (ReadResult, error) {
	var res ReadResult
	br := bufio.NewReaderSize(r, 1<<16)
	var buf []byte
	n, total := 0, 0
	for {
		line, long, err := readBoundedLine(br, buf[:0])
		buf = line[:0]
		if total > MaxJournalBytes || len(res.Events) > MaxJournalEvents {
			return res, &TooLargeError{Bytes: total > MaxJournalBytes}
		}
		if len(line) > 0 || long > 0 {
			n++
			complete := err == nil
			line = bytes.TrimSpace(line)
			switch {
			case long > 0:
				res.skip(n, "%d bytes, longer than %d MiB, skipped", long, MaxJournalLine>>20)
			case !complete:
				res.TruncatedTail = true
				res.skip(n, "incomplete last line (%d bytes) skipped", len(line))
			case len(line) == 0:
			default:
				if keep != nil {
					phase, kind, err := phases.PeekKind(line)
					if err == nil && !keep(phase, kind) {
						break
					}
				}
				ev, derr := phases.Decode(line)
				if derr != nil {
					res.skip(n, "%v", derr)
				} else {
					res.Events = append(res.Events, ev)
					total += len(line)
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

// TooLargeError is a journal past MaxJournalBytes or MaxJournalEvents.
type TooLargeError struct{ Bytes bool }

func (e *TooLargeError) Error() string {
	if e.Bytes {
		return fmt.Sprintf("over %d MiB of events: too large for a journal (a campaign's are well under 1 MiB)", MaxJournalBytes>>20)
	}
	return fmt.Sprintf("over %d events: too many for a journal", MaxJournalEvents)
}

// readBoundedLine appends the next line (with its newline) to buf. A line
// longer than MaxJournalLine is read to its end but not kept: long is then
// its length. err is io.EOF when the input ended without a newline.
func readBoundedLine(br *bufio.Reader, buf []byte) (line []byte, long int, err error) {
	total := 0
	for {
		chunk, err := br.ReadSlice('\n')
		total += len(chunk)
		if total <= MaxJournalLine {
			buf = append(buf, chunk...)
		} else {
			buf = buf[:0]
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if total > MaxJournalLine {
			return buf, total, err
		}
		return buf, 0, err
	}
}

// ReadJournalFile reads the journal at path, a regular file (a FIFO or a
// device is refused: reading one could block or never end).
func ReadJournalFile(path string) (ReadResult, error) {
	f, err := localfs.OpenInput(path)
	if err != nil {
		return ReadResult{}, err
	}
	defer f.Close()
	return ReadJournal(f)
}
