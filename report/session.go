package report

import (
	"context"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// Session is one campaign's live record. Phases send events into Sink; the
// session journals each (unless ephemeral) and then hands it to the
// subscriber (the UI) in order. Nothing recorded is lost: when the
// subscriber is slow, the session waits rather than drop a journalled event;
// only ephemeral samples are dropped under back-pressure.
type Session struct {
	journal *Journal
	in      chan phases.Event
	out     chan phases.Event
	secrets []string

	mu      sync.Mutex
	events  []phases.Event // journalled events, for the notebook
	dropped int
	errs    []error
	done    chan struct{}
	now     func() time.Time
}

// NewSession starts a session writing to journal (nil keeps events in memory
// only). The returned session runs until ctx ends.
func NewSession(ctx context.Context, journal *Journal) *Session {
	s := &Session{
		journal: journal,
		in:      make(chan phases.Event, 1024),
		out:     make(chan phases.Event, 4096),
		done:    make(chan struct{}),
		now:     time.Now,
	}
	go s.pump(ctx)
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

// Sink is where phases send their events.
func (s *Session) Sink() chan<- phases.Event { return s.in }

// Updates delivers every event, in order, after it was journalled.
func (s *Session) Updates() <-chan phases.Event { return s.out }

// Record journals ev synchronously and reports whether it was recorded (for
// notes, which the UI acknowledges only once they are on disk). It is then
// delivered on Updates like any other event.
func (s *Session) Record(ev phases.Event) error {
	ev = s.redact(ev)
	if !phases.Ephemeral(ev.Kind) {
		if s.journal != nil {
			if err := s.journal.Append(ev); err != nil {
				return err
			}
		}
		s.mu.Lock()
		s.events = append(s.events, ev)
		s.mu.Unlock()
	}
	s.deliver(ev)
	return nil
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

// Journal returns the session's journal (nil when in memory only).
func (s *Session) Journal() *Journal { return s.journal }

func (s *Session) deliver(ev phases.Event) {
	if phases.Ephemeral(ev.Kind) {
		select {
		case s.out <- ev:
		default:
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
		}
		return
	}
	s.out <- ev
}

func (s *Session) pump(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-s.in:
			if err := s.Record(ev); err != nil {
				s.mu.Lock()
				s.errs = append(s.errs, err)
				s.mu.Unlock()
			}
		}
	}
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
