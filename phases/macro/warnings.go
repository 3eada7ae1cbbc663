package macro

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// Warning kinds: a sweep's summary names each kind once, with its levels.
const (
	warnChunks       = "chunks"
	warnTokenize     = "tokenize"
	warnFinalOnly    = "final_only"
	warnChatShape    = "chat_shape"
	warnLength       = "output_length"
	warnInput        = "input_tokens"
	warnRefused      = "continuous_refused"
	warnServerTokens = "server_tokens"
	warnBunched      = "bunched"
	warnFew          = "few_requests"
	warnBehind       = "fell_behind"
	warnSaturated    = "over_saturated"
)

// FewRequestsWarning is a level's warning that it completed fewer than
// phases.MinRequests requests.
func FewRequestsWarning(completed int) string {
	return fmt.Sprintf("only %d request(s) completed (fewer than %d): the level's percentiles and TPOT rest on too few requests to quote",
		completed, phases.MinRequests)
}

// warning is one estimate or doubt about a level's figures.
type warning struct{ kind, text string }

// levelWarnings says aloud every estimate the level's figures rest on and
// every way the server did not do what was asked.
func levelWarnings(o observed, completed int, cfg Config, promptCal string, contAsked bool) []warning {
	if completed == 0 {
		return nil
	}
	var w []warning
	if completed < phases.MinRequests {
		w = append(w, warning{warnFew, FewRequestsWarning(completed)})
	}
	of := func(n int) string { return fmt.Sprintf("%d of %d completed requests", n, completed) }
	if o.chunks > 0 {
		w = append(w, warning{warnChunks, of(o.chunks) + " had no usage and their text was not counted by a /tokenize: output tokens counted one per chunk " +
			"(an estimate: a chunk of several tokens counts as one, so tok/s reads low and TPOT high)"})
	}
	if o.tokenized > 0 {
		w = append(w, warning{warnTokenize, of(o.tokenized) + " had no usage: output tokens counted by the server's /tokenize on the received text " +
			"(an estimate: re-tokenized text may differ from the tokens generated)"})
	}
	if o.finalOnly > 0 && contAsked {
		w = append(w, warning{warnFinalOnly, "continuous_usage_stats was asked for but " + of(o.finalOnly) +
			" had usage only at the end: tokens per chunk estimated from the final count"})
	}
	if o.chatShape > 0 && cfg.API == APICompletions {
		w = append(w, warning{warnChatShape, "chat-shaped chunks (delta) on the completions API in " + of(o.chatShape)})
	}
	if o.lenOff > 0 {
		w = append(w, warning{warnLength, fmt.Sprintf("output length not honoured: %d of %d completed requests counted more than 10%% off --output-len %d (%d to %d tokens)",
			o.lenOff, o.lenJudged, cfg.OutputLen, o.lenMin, o.lenMax)})
	}
	if o.promptUsage < completed {
		how := "sized with the server's /tokenize"
		if promptCal != "tokenize" {
			how = "estimated at one token per word (no /tokenize)"
		}
		w = append(w, warning{warnInput, fmt.Sprintf("%s had no prompt_tokens in usage: their input tokens are the prompt length %s", of(completed-o.promptUsage), how)})
	}
	return w
}

// refusedWarning is said when requests failed because the server refuses
// continuous_usage_stats (a sweep without its pre-flight).
func refusedWarning(ex []phases.FailureExample) []warning {
	for _, e := range ex {
		if e.Status >= 400 && e.Status < 500 && refusesContinuous(e.Body) {
			return []warning{{warnRefused, fmt.Sprintf("%d requests failed because the server refuses continuous_usage_stats: "+
				"run with the pre-flight request (without --no-preflight) to go on without it", e.Count)}}
		}
	}
	return nil
}

// inputSource says where a level's total_input_tokens came from.
func inputSource(o observed, completed int, promptCal string) string {
	switch {
	case completed == 0:
		return ""
	case o.promptUsage == completed:
		return "usage"
	case promptCal == "tokenize":
		return "tokenize"
	}
	return "estimate"
}

// warnings gathers the sweep's warnings: its own, then one line per kind
// of level warning naming the levels that had it.
type warnings struct {
	sweep []string
	kinds []string
	by    map[string]*levelWarn
}

type levelWarn struct {
	levels []string
	text   string
}

func (ws *warnings) addLevel(lr *phases.LevelResult, w []warning) {
	if ws.by == nil {
		ws.by = map[string]*levelWarn{}
	}
	name := phases.LevelName(lr.Concurrency, lr.Rate)
	for _, x := range w {
		lr.Warnings = append(lr.Warnings, x.text)
		lw := ws.by[x.kind]
		if lw == nil {
			lw = &levelWarn{text: x.text}
			ws.by[x.kind] = lw
			ws.kinds = append(ws.kinds, x.kind)
		}
		lw.levels = append(lw.levels, name)
	}
}

// list is the result document's top-level warnings.
func (ws *warnings) list() []string {
	out := append([]string{}, ws.sweep...)
	for _, k := range ws.kinds {
		lw := ws.by[k]
		out = append(out, fmt.Sprintf("%s: %s", strings.Join(lw.levels, ", "), lw.text))
	}
	return out
}

// LevelDetail is what follows a level's line: its warnings and an example
// of each distinct error not in seen (which it updates), one line each.
func LevelDetail(l phases.LevelResult, seen map[string]bool) []string {
	var out []string
	if l.GPU != nil {
		out = append(out, l.GPU.Line())
	}
	if line := ServerLine(l.Server); line != "" {
		out = append(out, line)
	}
	for _, x := range l.Warnings {
		out = append(out, "warning: "+x)
	}
	for _, e := range l.FailureExamples {
		if k := ErrorKey(e); !seen[k] {
			seen[k] = true
			out = append(out, "error: "+ErrorLine(e))
		}
	}
	return out
}

// ErrorKey identifies a distinct error across levels.
func ErrorKey(e phases.FailureExample) string {
	return fmt.Sprintf("%s\x00%d\x00%s", e.Kind, e.Status, e.Body)
}

// ErrorLine is one distinct error in one line: its kind, HTTP status and
// what the server said.
func ErrorLine(e phases.FailureExample) string {
	s := e.Kind
	if e.Status != 0 && e.Kind != fmt.Sprintf("http_%d", e.Status) {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	s += fmt.Sprintf(" ×%d", e.Count)
	if e.Body != "" {
		s += ": " + oneLine(e.Body)
	}
	return s
}
