// Package enginelog reads a serving engine's log without being told which
// engine wrote it: vLLM's until a line shows SGLang's (its rank-tagged
// "[DATE TIME TP0] " prefix or a message only SGLang prints), SGLang's from
// there on. The summary names the engine.
package enginelog

import (
	"io"

	"github.com/profdeck/profdeck/phases/load/sglanglog"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
)

// Engines that can be named for a log; Auto tells by itself.
const (
	Auto   = "auto"
	VLLM   = vllmlog.EngineVLLM
	SGLang = sglanglog.Engine
)

// New returns a parser for engine (Auto, VLLM or SGLang; "" is Auto).
func New(engine string) *vllmlog.Parser {
	switch engine {
	case VLLM:
		return vllmlog.New()
	case SGLang:
		return vllmlog.NewAuto(always{})
	}
	return vllmlog.NewAuto(sglanglog.Dialect{})
}

// Read parses a whole log, telling its engine by itself.
func Read(r io.Reader) (*vllmlog.Summary, error) { return vllmlog.ReadWith(New(Auto), r) }

// always is SGLang's dialect taken from the first line (the engine was
// named).
type always struct{ sglanglog.Dialect }

func (always) Detect(string) bool { return true }

// Message is a log line's message without its wrappers, prefix and
// header, for quoting it briefly, whichever engine wrote it.
func Message(line string) string {
	if msg, ok := sglanglog.Message(line); ok {
		return msg
	}
	return vllmlog.Message(line)
}
