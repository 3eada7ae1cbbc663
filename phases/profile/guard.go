package profile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Limits on a trace's JSON, checked on the bytes before the decoder sees
// them, so that no input (a 2 GiB string, a number of a million digits,
// deep nesting, a gzip bomb) makes the parser hold more than a few MiB.
const (
	// MaxTraceString is the longest string (kernel names are a few kB).
	MaxTraceString = 1 << 20
	// MaxTraceNumber is the longest number literal.
	MaxTraceNumber = 256
	// MaxTraceDepth is the deepest nesting of objects and arrays.
	MaxTraceDepth = 128
	// MaxTraceEvent is the largest single event (any object below the top
	// level, any array below the events array).
	MaxTraceEvent = 8 << 20
	// MaxTraceSpace is the longest run of whitespace between tokens.
	MaxTraceSpace = 1 << 20
	// MaxTraceBytes is the most decompressed bytes a trace may hold.
	MaxTraceBytes = 8 << 30
)

// ErrTraceTooLarge is returned when a trace holds more decompressed bytes
// than its reader allows.
var ErrTraceTooLarge = errors.New("trace too large")

// traceLimitError names the limit an input broke.
type traceLimitError struct{ what string }

func (e *traceLimitError) Error() string { return e.what }

// guard is an io.Reader that passes JSON through while checking every
// token against the limits above, and the total against max bytes.
type guard struct {
	r   io.Reader
	max int64 // decompressed bytes allowed
	off int64 // bytes passed so far

	inStr, esc bool
	run        int     // length of the current string, number or whitespace run
	runKind    byte    // 's' string, 'n' number, 'w' whitespace, 0 none
	open       []int64 // offset where each open container started (-1: unbounded)
	bound      int64   // start of the outermost bounded container, -1 when none
	err        error
}

func newGuard(r io.Reader, max int64) *guard { return &guard{r: r, max: max, bound: -1} }

func (g *guard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	for i := 0; i < n; i++ {
		if g.inStr && !g.esc {
			// Fast path: the plain bytes of a string up to its quote or
			// next escape are only counted.
			k := bytes.IndexAny(p[i:n], "\"\\")
			if k < 0 {
				k = n - i
			}
			if k > 0 {
				g.run += k
				g.off += int64(k)
				i += k
				if g.run > MaxTraceString || g.off > g.max || (g.bound >= 0 && g.off-g.bound > MaxTraceEvent) {
					i, g.off, g.run = i-k, g.off-int64(k), g.run-k // step byte by byte to the limit
				} else if i == n {
					break
				}
			}
		}
		if g.off >= g.max {
			g.err = fmt.Errorf("%w: more than %d MiB once decompressed", ErrTraceTooLarge, g.max>>20)
			return i, g.err
		}
		if k := byteKind[p[i]]; k != 0 && !g.inStr && (g.bound < 0 || g.off-g.bound <= MaxTraceEvent) {
			// Fast path for the bytes between tokens: a run of spaces or
			// of a number's characters grows, anything else ends it.
			if k != g.runKind {
				g.run, g.runKind = 0, k
			}
			if k == 'o' || g.run < runLimit[k] {
				if k == 'o' {
					g.runKind = 0
				}
				g.run++
				g.off++
				continue
			}
		}
		if e := g.step(p[i]); e != nil {
			g.err = e
			return i, e
		}
		g.off++
	}
	return n, err
}

func (g *guard) fail(format string, a ...any) error {
	return &traceLimitError{fmt.Sprintf("byte %d: ", g.off) + fmt.Sprintf(format, a...)}
}

// step checks one byte.
func (g *guard) step(c byte) error {
	if g.bound >= 0 && g.off-g.bound > MaxTraceEvent {
		return g.fail("an event or value larger than %d MiB", MaxTraceEvent>>20)
	}
	if g.inStr {
		g.run++
		if g.run > MaxTraceString {
			return g.fail("a string longer than %d KiB", MaxTraceString>>10)
		}
		switch {
		case g.esc:
			g.esc = false
		case c == '\\':
			g.esc = true
		case c == '"':
			g.inStr, g.run, g.runKind = false, 0, 0
		}
		return nil
	}
	switch {
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		return g.extend('w', MaxTraceSpace, "whitespace")
	case c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || (c >= '0' && c <= '9'):
		return g.extend('n', MaxTraceNumber, "a number")
	}
	g.run, g.runKind = 0, 0
	switch c {
	case '"':
		g.inStr = true
	case '{', '[':
		if len(g.open) >= MaxTraceDepth {
			return g.fail("nesting deeper than %d", MaxTraceDepth)
		}
		start := int64(-1)
		// The root and the events array (an array in the root object)
		// may be as long as the trace; any event or value below is bounded.
		if len(g.open) >= 2 || (len(g.open) == 1 && c == '{') {
			start = g.off
		}
		if start >= 0 && g.bound < 0 {
			g.bound = start
		}
		g.open = append(g.open, start)
	case '}', ']':
		if n := len(g.open); n > 0 {
			if g.open[n-1] == g.bound {
				g.bound = -1
			}
			g.open = g.open[:n-1]
		}
	}
	return nil
}

// extend grows the current run of kind k, failing past limit.
func (g *guard) extend(k byte, limit int, what string) error {
	if g.runKind != k {
		g.run, g.runKind = 0, k
	}
	g.run++
	if g.run > limit {
		return g.fail("%s longer than %d bytes", what, limit)
	}
	return nil
}

// byteKind sorts the bytes the fast path takes: 'w' whitespace, 'n' a
// number's characters, 'o' other bytes that are not structure (':', ',',
// the letters of true, false and null); 0 for the rest (quotes, brackets).
var byteKind = func() (t [256]byte) {
	for _, c := range []byte(" \t\r\n") {
		t[c] = 'w'
	}
	for _, c := range []byte("+-.eE0123456789") {
		t[c] = 'n'
	}
	for _, c := range []byte(":,abcdfilnrstu") {
		if t[c] == 0 {
			t[c] = 'o'
		}
	}
	return t
}()

// runLimit is the longest run of each kind the fast path lets through.
var runLimit = [256]int{'w': MaxTraceSpace, 'n': MaxTraceNumber}
