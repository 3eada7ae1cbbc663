package report

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
)

// serverLevels writes the server's own signals per level, when its
// /metrics was read: KV-cache use, the queue, preemptions (SGLang:
// retracted requests), the prefix cache's hit rate and speculative
// decoding's acceptance and mean accepted length. A column the server did
// not publish at any level is left out.
func (n *nb) serverLevels(levels []phases.LevelResult) {
	var with []phases.LevelResult
	var prefix, spec, retract bool
	engine := ""
	for _, l := range levels {
		s := l.Server
		if s == nil || !s.Available {
			continue
		}
		with = append(with, l)
		prefix = prefix || s.PrefixCacheHitRate != nil
		spec = spec || s.SpecAcceptRate != nil || s.SpecAcceptLength != nil
		retract = retract || s.MaxRetracted != nil
		if s.Engine != "" {
			engine = s.Engine
		}
	}
	if len(with) == 0 {
		return
	}
	head, rule := "| C | KV max | running mean | waiting mean (max) | ", "|---:|---:|---:|---:|"
	if retract {
		head, rule = head+"retracted max | ", rule+"---:|"
	} else {
		head, rule = head+"preemptions | ", rule+"---:|"
	}
	if prefix {
		head, rule = head+"prefix cache hit | ", rule+"---:|"
	}
	if spec {
		head, rule = head+"spec accept | mean accepted length | ", rule+"---:|---:|"
	}
	src := "the server's /metrics"
	if engine != "" {
		src = fmt.Sprintf("the server's /metrics (%s)", engine)
	}
	n.p("Server signals per level, from %s:\n\n", src)
	n.ln(head[:len(head)-1])
	n.ln(rule)
	for _, l := range with {
		s := l.Server
		c := levelLabel(l)
		row := fmt.Sprintf("| %s | %.0f%% | %.1f | %.1f (%.0f) |", c, 100*s.MaxKVCacheUsage, s.MeanRunning, s.MeanWaiting, s.MaxWaiting)
		if retract {
			row += " " + pctOrDash(s.MaxRetracted, 1, "%.0f") + " |"
		} else {
			row += fmt.Sprintf(" %.0f |", s.Preemptions)
		}
		if prefix {
			row += " " + pctOrDash(s.PrefixCacheHitRate, 100, "%.1f%%") + traceReuse(l.Schedule) + " |"
		}
		if spec {
			row += " " + pctOrDash(s.SpecAcceptRate, 100, "%.1f%%") + " | " + pctOrDash(s.SpecAcceptLength, 1, "%.2f") + " |"
		}
		n.ln(row)
	}
	n.ln("")
	if prefix || spec {
		n.ln("Prefix cache hit: cached over queried prompt tokens over the level (vLLM's counters), or the mean of SGLang's gauge. " +
			"Mean accepted length: 1 + accepted tokens ÷ drafts, the bonus token included (vLLM's definition).\n")
	}
}

// pctOrDash is *v × scale in format, or — when v is nil.
func pctOrDash(v *float64, scale float64, format string) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf(format, *v*scale)
}

// traceReuse is, for a replayed trace's level, the reuse its hash ids
// imply, set beside the server's hit rate.
func traceReuse(sc *phases.Schedule) string {
	if sc == nil || sc.TraceReuse == nil {
		return ""
	}
	return fmt.Sprintf(" (the trace implies %.1f%%)", 100**sc.TraceReuse)
}
