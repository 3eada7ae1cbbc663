package vllmlog

import (
	"bytes"
	"strconv"
	"strings"
)

// maxLine caps one physical line kept while waiting for its end, so a
// runaway line without newlines cannot grow memory without bound.
const maxLine = 64 << 10

// Parser turns log text into records as it arrives. Feed it either raw bytes
// (Write) or lines already split on "\n" (Line); it splits on "\r" itself.
// The zero value is not ready: use New.
type Parser struct {
	partial []byte
	// pending is a bare process prefix waiting for the bar printed after it.
	pending *proc
	// ranks maps a pid to its rank once known.
	ranks map[int]int
	// lastTime is the last logger header's time.
	lastTime string
	// inTB holds, per process (pid, 0 for the unprefixed stream), whether
	// a traceback is being printed.
	inTB map[int]bool
	// dialects are the other engines NewAuto watches for; active is the
	// one detected (nil: vLLM).
	dialects []Dialect
	active   Dialect
	tbRank   int // the rank of the dialect's traceback being printed
}

// New returns a parser.
func New() *Parser { return &Parser{ranks: map[int]int{}, inTB: map[int]bool{}} }

// Reset forgets everything (the log file was truncated or replaced).
func (p *Parser) Reset() {
	p.partial = p.partial[:0]
	p.pending = nil
	p.ranks = map[int]int{}
	p.inTB = map[int]bool{}
	p.lastTime = ""
	p.active = nil
}

// Write parses raw bytes; an incomplete last line is kept for the next call.
func (p *Parser) Write(b []byte) []Record {
	var out []Record
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.partial = append(p.partial, b...)
			if len(p.partial) > maxLine {
				out = append(out, p.Line(string(p.partial))...)
				p.partial = p.partial[:0]
			}
			break
		}
		p.partial = append(p.partial, b[:i]...)
		out = append(out, p.Line(string(p.partial))...)
		p.partial = p.partial[:0]
		b = b[i+1:]
	}
	return out
}

// Flush parses whatever partial line is left.
func (p *Parser) Flush() []Record {
	if len(p.partial) == 0 {
		return nil
	}
	out := p.Line(string(p.partial))
	p.partial = p.partial[:0]
	return out
}

// Line parses one received line (without its "\n"). It can hold several
// segments (tqdm's "\r" updates, glued lines), so it returns any number of
// records; empty segments give none.
func (p *Parser) Line(line string) []Record {
	var out []Record
	for _, seg := range splitSegments(line) {
		if r, ok := p.segment(seg); ok {
			out = append(out, r)
		}
	}
	return out
}

func (p *Parser) segment(raw string) (Record, bool) {
	text := cleanLine(raw)
	if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "# ") {
		// Blank, or a comment line of an annotated log (our fixtures).
		return Record{}, false
	}
	if p.dialects != nil {
		p.detect(text)
		if p.active != nil {
			return p.dialectSegment(text), true
		}
	}
	r := Record{Text: text, Rank: -1}
	rest, ok := p.readPrefix(&r, text)
	if !ok {
		return Record{}, false
	}
	h, msg, _ := parseHeader(rest)
	r.Level, r.File = h.level, h.file
	if r.Level == "" {
		r.Level = foreignLevel(msg)
	}
	if h.time != "" {
		p.lastTime = h.time
	}
	r.Time = p.lastTime
	r.Msg = strings.TrimSpace(msg)
	readTraceback(&r, msg, p.inTB[r.PID])
	if !r.Traceback && strings.HasSuffix(r.Msg, "Traceback (most recent call last):") {
		r.Traceback = true // "router init state: Traceback (most recent call last):"
	}
	switch {
	case r.Exception != "":
		delete(p.inTB, r.PID)
	case r.Traceback && len(p.inTB) < maxNamedRanks:
		p.inTB[r.PID] = true
	}
	classify(&r)
	readSetup(&r)
	if isTraceback(msg) {
		switch r.Kind {
		case KindWarning:
			// A traceback's frames and code lines repeat the ERROR
			// header; only its exception line is worth showing.
			r.Kind = KindOther
		case KindFailure:
			// `raise RuntimeError(f"NCCL error: ...")` names the failure
			// but the exception line that follows is the evidence.
			r.Strong = false
		}
	}
	switch r.Kind {
	case KindRankInfo:
		rank := int(r.Value)
		if _, ok := p.ranks[r.PID]; r.PID != 0 && (ok || len(p.ranks) < maxNamedRanks) {
			p.ranks[r.PID] = rank
		}
		r.Rank = rank
	case KindShardBar:
		// Only global rank 0 draws the weight-loading bar.
		if r.Rank < 0 {
			r.Rank = 0
		}
	}
	return r, true
}

// readPrefix fills r's process from the line's prefix and returns the
// rest; false for a bare prefix (the worker's prefixer wrote it and tqdm's
// bar follows on the next line).
func (p *Parser) readPrefix(r *Record, text string) (string, bool) {
	pr, rest, hasPrefix := parsePrefix(text)
	if !hasPrefix {
		pr, rest, hasPrefix = torchRankPrefix(text)
	}
	if hasPrefix && strings.TrimSpace(rest) == "" {
		p.pending = &pr
		return "", false
	}
	if !hasPrefix && p.pending != nil {
		pr, hasPrefix = *p.pending, true
	}
	p.pending = nil
	if !hasPrefix {
		return rest, true
	}
	r.Proc, r.PID, r.Rank, r.Host = pr.name, pr.pid, pr.rank, pr.host
	if g := pr.glued; g != nil {
		r.GluedProc, r.GluedPID, r.GluedRank = g.name, g.pid, g.rank
	}
	if r.Rank < 0 {
		if rk, ok := p.ranks[pr.pid]; ok {
			r.Rank = rk
		}
	} else if _, ok := p.ranks[pr.pid]; ok || len(p.ranks) < maxNamedRanks {
		p.ranks[pr.pid] = r.Rank
	}
	return rest, true
}

// torchRankPrefix reads torch's "[rank0]: " prefix as the process of that
// rank (its lines are that process's own stream).
func torchRankPrefix(s string) (proc, string, bool) {
	if !strings.HasPrefix(s, "[rank") {
		return proc{rank: -1}, s, false
	}
	m := torchRankRe.FindStringSubmatchIndex(s)
	if m == nil {
		return proc{rank: -1}, s, false
	}
	n, _ := strconv.Atoi(s[m[2]:m[3]])
	return proc{name: "rank", rank: n}, s[m[1]:], true
}

// foreignLevel is the ERROR (or CRITICAL, FATAL) level of a line another
// logger wrote around an engine's message (KServe's, Ray Serve's), "" for
// any other line.
func foreignLevel(msg string) string {
	head := msg[:min(len(msg), 48)]
	for _, lv := range []string{"ERROR", "CRITICAL", "FATAL"} {
		if strings.HasPrefix(head, lv+" ") || strings.Contains(head, " "+lv+" ") || strings.Contains(head, " - "+lv+" - ") {
			return "ERROR"
		}
	}
	return ""
}

// Message returns a log line's message without its transport wrapper,
// colour, process prefix and logger header (for quoting it briefly).
func Message(line string) string {
	text := cleanLine(line)
	_, rest, _ := parsePrefix(text)
	_, msg, _ := parseHeader(rest)
	return strings.TrimSpace(msg)
}

// isTraceback reports whether an ERROR message is the body of a Python
// traceback (its header line, a frame, a code line, a caret marker).
func isTraceback(msg string) bool {
	t := strings.TrimSpace(msg)
	return strings.HasPrefix(msg, " ") || strings.HasPrefix(t, "Traceback (most recent call last)") ||
		strings.HasPrefix(t, "File \"") || t != "" && strings.Trim(t, "^~ ") == ""
}
