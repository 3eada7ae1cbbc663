package fleet

import (
	"bytes"
	"io"
	"math"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro/hdrsec"
)

// sink takes what one agent sends: its batches of histograms and counts,
// added up.
type sink struct {
	mu      sync.Mutex
	seconds []Second
	b       hdrsec.Batch // the counts so far; First and Last over them all
	// start is when the agent started against the level's start, on the
	// coordinator's clock (startKnown: the agent said).
	start      time.Duration
	startKnown bool
	inFlight   int // as the agent's last tick said
}

// ticked takes the agent's own tick.
func (s *sink) ticked(t phases.MacroTick) {
	s.mu.Lock()
	s.inFlight = t.InFlight
	s.mu.Unlock()
}

// started notes when the agent started, against the level's start.
func (s *sink) started(d time.Duration) {
	s.mu.Lock()
	s.start, s.startKnown = d, true
	s.mu.Unlock()
}

// batch adds one batch; its seconds move onto the level's axis by the
// agent's start.
func (s *sink) batch(b hdrsec.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shift := int64(math.Round(s.start.Seconds()))
	for _, sec := range b.Seconds {
		sec.Unix += shift
		s.seconds = append(s.seconds, sec)
	}
	if b.OK > 0 {
		if s.b.OK == 0 || b.First < s.b.First {
			s.b.First = b.First
		}
		s.b.Last = max(s.b.Last, b.Last)
	}
	s.b.OK += b.OK
	s.b.Failed += b.Failed
	s.b.Tokens += b.Tokens
	s.b.InWindow += b.InWindow
}

// lockedWriter is one writer several agents' records go to.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lineWriter passes one agent's records on whole lines at a time, so that
// the agents' records never interleave inside a line of the shared writer.
type lineWriter struct {
	buf []byte
	to  *lockedWriter
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.to.Write(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}
