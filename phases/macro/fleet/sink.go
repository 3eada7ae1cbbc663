package fleet

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/hdrsec"
)

// sink takes what one agent sends: its batches of histograms and counts,
// added up, and its records when the sweep writes them.
type sink struct {
	mu      sync.Mutex
	seconds []Second
	b       hdrsec.Batch // the counts so far; First and Last over them all
	// start is when the agent started against the level's start, on the
	// coordinator's clock (startKnown: the agent said).
	start      time.Duration
	startKnown bool
	forward    *lockedWriter // the sweep's record writer (nil: none)
	buf        []byte
	kept       []macro.Record
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

// Write takes the agent's records, keeps each finished request's and
// passes them on to the sweep's writer.
func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		var r macro.Record
		if json.Unmarshal(s.buf[:i], &r) == nil && !r.Warmup && r.Failure == "" {
			s.kept = append(s.kept, r)
		}
		s.buf = s.buf[i+1:]
	}
	if s.forward != nil {
		s.forward.Write(p)
	}
	return len(p), nil
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
