package report

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/localfs"
)

// Autosave keeps a session's notebook on disk: Kick asks for a rewrite,
// which happens in the background at most once per interval; WriteNow
// writes at once (the w key); Close writes a last time.
type Autosave struct {
	s    *Session
	path string
	opts NotebookOptions
	min  time.Duration

	writeMu sync.Mutex // one write at a time

	mu      sync.Mutex
	last    time.Time // when the last write ended (monotonic clock)
	lastAt  time.Time // the last successful write's stamp (opts clock)
	lastErr string
	closed  bool

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewAutosave starts autosaving s's notebook to path, rewriting it at most
// once per minInterval (3 s when zero or less). Temporary files a crash left
// beside path are removed.
func NewAutosave(s *Session, path string, opts NotebookOptions, minInterval time.Duration) *Autosave {
	if minInterval <= 0 {
		minInterval = 3 * time.Second
	}
	localfs.RemoveStaleTemps(path)
	a := &Autosave{
		s: s, path: path, opts: opts, min: minInterval,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go a.loop()
	return a
}

// Path is where the notebook is written.
func (a *Autosave) Path() string { return a.path }

// Kick asks for a rewrite. It never blocks: kicks that arrive while a
// rewrite is pending are merged into it.
func (a *Autosave) Kick() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// WriteNow writes the notebook at once and returns where and when.
func (a *Autosave) WriteNow() (path string, at time.Time, err error) {
	if a.s != nil {
		// A note whose Record is under way (typed just before w) goes in.
		a.s.Settle(2 * time.Second)
	}
	at, err = a.write()
	return a.path, at, err
}

// Last returns the last successful write's time (zero before the first)
// and the last write's error, if it failed.
func (a *Autosave) Last() (at time.Time, errText string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastAt, a.lastErr
}

// Close stops autosaving and writes the notebook a last time. It is safe to
// call more than once.
func (a *Autosave) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	close(a.stop)
	<-a.done
	if a.s != nil {
		a.s.Settle(2 * time.Second)
	}
	_, err := a.write()
	return err
}

func (a *Autosave) loop() {
	defer close(a.done)
	for {
		select {
		case <-a.stop:
			return
		case <-a.kick:
		}
		a.mu.Lock()
		wait := a.min - time.Since(a.last)
		a.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-a.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		// Kicks that came in while waiting are served by this write.
		select {
		case <-a.kick:
		default:
		}
		_, _ = a.write()
	}
}

// write renders the session's events and writes the notebook.
func (a *Autosave) write() (time.Time, error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	opts := a.opts
	var events []phases.Event
	if a.s != nil {
		events = a.s.Events()
		opts.Secrets = append(append([]string(nil), opts.Secrets...), a.s.Secrets()...)
		if opts.Journal == "" && a.s.Journal() != nil {
			opts.Journal = a.s.Journal().Path()
		}
	}
	at := opts.now()
	fixed := at
	opts.Now = func() time.Time { return fixed }
	err := writeNotebookSafely(a.path, events, opts)

	a.mu.Lock()
	a.last = time.Now()
	prevErr := a.lastErr
	var ce *ChartsError
	switch {
	case err == nil:
		a.lastAt, a.lastErr = at, ""
	case errors.As(err, &ce): // the notebook itself was written
		a.lastAt, a.lastErr = at, err.Error()
	default:
		a.lastErr = err.Error()
	}
	a.mu.Unlock()

	if a.s != nil {
		saved := phases.NotebookSaved{Path: a.path, Failed: err != nil && ce == nil}
		if err != nil {
			saved.Err = err.Error()
		}
		_ = a.s.Record(phases.New(at, phases.KindNotesSaved, saved))
		if err != nil && err.Error() != prevErr {
			// Keep a failing write in the journal once, not at every retry.
			_ = a.s.Record(phases.New(at, phases.KindSessionError, phases.ErrorEvent{Where: "notebook", Err: err.Error()}))
		}
	}
	return at, err
}

// writeNotebookSafely is WriteNotebook with a panic turned into an error:
// autosave runs inside the cockpit, which must not die for a notebook.
func writeNotebookSafely(path string, events []phases.Event, opts NotebookOptions) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("notebook %s: rendering failed: %v", path, r)
		}
	}()
	return WriteNotebook(path, events, opts)
}
