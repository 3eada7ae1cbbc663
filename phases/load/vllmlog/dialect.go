package vllmlog

import "strings"

// Dialect lets another engine's log be read with this package's line
// cleaning, traceback reading, failure model and summary: it recognises the
// engine's lines, splits its own prefix off, and classifies its own
// messages. Lines it leaves alone get the common classification (progress
// bars, exceptions, OOM, NCCL, readiness of the HTTP server).
type Dialect interface {
	// Engine names the engine ("sglang"); records read with the dialect
	// carry it.
	Engine() string
	// Detect reports whether a cleaned line can only come from the engine.
	Detect(text string) bool
	// Split reads the engine's own prefix off a cleaned line; ok is false
	// for a line without one (a traceback's body, a progress bar).
	Split(text string) (p Prefix, msg string, ok bool)
	// Classify sets r's kind and figures from an engine-specific message
	// (r.Msg); false leaves r to the common classification.
	Classify(r *Record) bool
}

// Prefix is what an engine's line prefix tells: the process that wrote it
// ("TP0", "DP1 TP1"), its rank (-1 when none), the logger's time
// (HH:MM:SS) and level ("" when the format has none).
type Prefix struct {
	Proc  string
	Rank  int
	Time  string
	Level string
}

// NewAuto returns a parser that reads vLLM's log until a line shows that
// another engine wrote it (one of dialects detects it), and that engine's
// from there on.
func NewAuto(dialects ...Dialect) *Parser {
	p := New()
	p.dialects = dialects
	return p
}

// Engine names the engine the parser reads: a detected dialect's, else
// "vllm".
func (p *Parser) Engine() string {
	if p.active != nil {
		return p.active.Engine()
	}
	return EngineVLLM
}

// EngineVLLM is the engine this package reads natively.
const EngineVLLM = "vllm"

// detect switches to the dialect that recognises text, once.
func (p *Parser) detect(text string) {
	if p.active != nil {
		return
	}
	for _, d := range p.dialects {
		if d.Detect(text) {
			p.active = d
			return
		}
	}
}

// dialectSegment reads one cleaned line of the active dialect's log.
func (p *Parser) dialectSegment(text string) Record {
	d := p.active
	r := Record{Text: text, Rank: -1, Engine: d.Engine()}
	msg := text
	if outer, rest, ok := parsePrefix(text); ok {
		// A launcher's process prefix around the engine's line (a Ray
		// actor running the server: "(SGLangEngine pid=6680) [… TP3] …").
		msg = rest
		if outer.host != "" {
			r.Host = outer.host
		}
	}
	if pr, rest, ok := d.Split(msg); ok {
		r.Proc, r.Rank, r.Level, msg = pr.Proc, pr.Rank, pr.Level, rest
		if pr.Time != "" {
			p.lastTime = pr.Time
		}
	}
	r.Time = p.lastTime
	r.Msg = strings.TrimSpace(msg)
	// Tracebacks come on the process's raw stderr, unprefixed: their
	// state is kept for the whole stream.
	readTraceback(&r, msg, p.inTB[0])
	if strings.HasSuffix(r.Msg, "Traceback (most recent call last):") {
		r.Traceback = true // "Scheduler hit an exception: Traceback (most recent call last):"
	}
	// Its lines belong to the rank whose prefixed line began it ("[… TP3]
	// Scheduler hit an exception: Traceback …").
	if r.Traceback && r.Proc == "" && p.inTB[0] {
		r.Rank = p.tbRank
	}
	switch {
	case r.Exception != "":
		p.inTB[0] = false
	case r.Traceback:
		if !p.inTB[0] {
			p.tbRank = r.Rank
		}
		p.inTB[0] = true
	}
	if !d.Classify(&r) {
		classify(&r)
	}
	readSetup(&r)
	if r.Kind == KindShardBar && r.Rank < 0 {
		r.Rank = 0
	}
	return r
}
