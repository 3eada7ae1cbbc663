package report

import (
	"context"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// maxEphemeralBacklog is how many undelivered events may wait before new
// ephemeral samples are dropped (journalled events are never dropped).
const maxEphemeralBacklog = 4096

// Session is one campaign's live record. Phases send events into Sink; the
// session journals each (unless ephemeral) and then hands it to the
// subscriber (the UI) in journal order. Nothing recorded is lost: journalled
// events wait in an unbounded queue when the subscriber is slow, so Record
// never blocks on the subscriber; only ephemeral samples are dropped under
// back-pressure.
type Session struct {
	journal *Journal
	in      chan phases.Event
	out     chan phases.Event

	recMu sync.Mutex // orders journal appends with the delivery queue

	mu      sync.Mutex
	secrets []string
	events  []phases.Event // journalled events, for the notebook
	queue   []phases.Event // recorded, not yet delivered on Updates
	wake    chan struct{}
	dropped int
	errs    []error
	done    chan struct{}

	lastJournalErr string // announced once on Updates

	failed  chan struct{} // closed at the first journal error
	failErr error         // that error

	inflight     int           // Record calls under way
	settled      chan struct{} // closed when inflight drops to zero
	settledValid bool
}

// NewSession starts a session writing to journal (nil keeps events in memory
// only); the events the journal already held count as recorded. The returned
// session runs until ctx ends.
func NewSession(ctx context.Context, journal *Journal) *Session {
	s := &Session{
		journal: journal,
		in:      make(chan phases.Event, 1024),
		out:     make(chan phases.Event, 256),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		failed:  make(chan struct{}),
	}
	if journal != nil {
		// A resumed campaign: earlier events feed the notebook, not Updates.
		s.events = append(s.events, journal.Prior().Events...)
	}
	go s.pump(ctx)
	go s.forward(ctx)
	return s
}

// Redact registers a secret (an API key, a password) that must never reach
// the journal or the notebook: it is replaced by "[redacted]" wherever it
// appears in an event.
func (s *Session) Redact(secret string) {
	if len(secret) < 4 {
		return
	}
	s.mu.Lock()
	s.secrets = append(s.secrets, secret)
	s.mu.Unlock()
}

// Secrets returns the registered secrets (for scrubbing rendered output).
func (s *Session) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.secrets...)
}

// Sink is where phases send their events.
func (s *Session) Sink() chan<- phases.Event { return s.in }

// Updates delivers every event, in order, after it was journalled.
func (s *Session) Updates() <-chan phases.Event { return s.out }

// Record journals ev synchronously (written and fsynced) and reports whether
// it was recorded: notes are acknowledged only once this returns nil. It is
// then delivered on Updates like any other event. Record never waits for the
// subscriber.
func (s *Session) Record(ev phases.Event) error {
	return s.record(ev, false)
}

// maxKeptErrors bounds the journal errors a session keeps.
const maxKeptErrors = 100

// record journals and delivers ev. When the journal fails, keepOnError
// still shows the event (a phase's result stays on screen and in the
// notebook) and announces the failure; a note's Record only reports it.
func (s *Session) record(ev phases.Event, keepOnError bool) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	s.begin()
	defer s.end()
	ev = s.redact(ev)
	eph := phases.Ephemeral(ev.Kind)
	if !eph && ev.Kind != phases.KindNotesNote && ev.Kind != phases.KindNotesMarker {
		// Notes stay verbatim (registered secrets are still redacted).
		ev = scrubEvent(ev)
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	var jerr error
	if !eph && s.journal != nil {
		if jerr = s.journal.Append(ev); jerr != nil {
			s.mu.Lock()
			// While a disk keeps failing, keep the first errors and the
			// latest, not one per event for hours.
			if len(s.errs) < maxKeptErrors {
				s.errs = append(s.errs, jerr)
			} else {
				s.errs[len(s.errs)-1] = jerr
			}
			if s.failErr == nil {
				s.failErr = jerr
				close(s.failed)
			}
			first := keepOnError && jerr.Error() != s.lastJournalErr
			if keepOnError {
				s.lastJournalErr = jerr.Error()
			}
			s.mu.Unlock()
			if !keepOnError {
				return jerr // the caller (a note) says so itself
			}
			if first {
				s.announce(jerr)
			}
		}
	}
	if !eph {
		s.mu.Lock()
		s.events = append(s.events, ev)
		s.mu.Unlock()
	}
	s.enqueue(ev, eph)
	return jerr
}

// announce shows a journal error on Updates (the pane) and keeps it with
// the session's events, so that a notebook written next says it too.
func (s *Session) announce(jerr error) {
	ev := phases.New(time.Now(), phases.KindSessionError, phases.ErrorEvent{Where: "journal", Err: jerr.Error() + ": what follows is not in the journal"})
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	s.enqueue(ev, false)
}

// Failed is closed at the first journal write or sync that failed (a full
// disk, a quota, an I/O error): from then on what happens is not recorded,
// and a run stops (JournalErr says why).
func (s *Session) Failed() <-chan struct{} { return s.failed }

// JournalErr is the first journal error, nil while every event was
// recorded.
func (s *Session) JournalErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failErr
}

// enqueue hands ev to the forwarder; ephemeral events are dropped when the
// subscriber is far behind.
func (s *Session) enqueue(ev phases.Event, eph bool) {
	s.mu.Lock()
	if eph && len(s.queue) >= maxEphemeralBacklog {
		s.dropped++
	} else {
		s.queue = append(s.queue, ev)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Events returns a copy of the journalled events so far.
func (s *Session) Events() []phases.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]phases.Event(nil), s.events...)
}

// Errors returns journal errors seen so far.
func (s *Session) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// Dropped is how many ephemeral samples were dropped under back-pressure.
func (s *Session) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Journal returns the session's journal (nil when in memory only).
func (s *Session) Journal() *Journal { return s.journal }

// Done is closed when the session has stopped (its context ended).
func (s *Session) Done() <-chan struct{} { return s.done }

// forward moves recorded events from the queue to Updates, in order.
func (s *Session) forward(ctx context.Context) {
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, ev := range batch {
			select {
			case s.out <- ev:
			case <-ctx.Done():
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}

func (s *Session) pump(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			// Journal what phases already handed over before stopping.
			for {
				select {
				case ev := <-s.in:
					s.take(ev)
				default:
					return
				}
			}
		case ev := <-s.in:
			s.take(ev)
		}
	}
}

// take records an event from the sink (errors are kept in s.errs), or
// releases a barrier: every event sent before it is recorded.
func (s *Session) take(ev phases.Event) {
	if b, ok := ev.Data.(phases.Barrier); ok {
		b.Release()
		return
	}
	_ = s.record(ev, true)
}

func (s *Session) redact(ev phases.Event) phases.Event {
	s.mu.Lock()
	secrets := s.secrets
	s.mu.Unlock()
	if len(secrets) == 0 {
		return ev
	}
	return redactEvent(ev, secrets)
}

func (s *Session) begin() {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
}

func (s *Session) end() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 && s.settledValid {
		close(s.settled)
		s.settledValid = false
	}
	s.mu.Unlock()
}

// Settle waits until no Record call is under way, or timeout passes, so
// that a notebook written on request includes a note whose Record started
// just before. It reports whether the session was settled.
func (s *Session) Settle(timeout time.Duration) bool {
	s.mu.Lock()
	if s.inflight == 0 {
		s.mu.Unlock()
		return true
	}
	if !s.settledValid {
		s.settled = make(chan struct{})
		s.settledValid = true
	}
	ch := s.settled
	s.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
