package macro

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// ServerLine is a level's server side in one line: the KV cache, the
// scheduler's queue, preemptions, the prefix cache and speculative
// decoding, each as far as the server publishes it ("" when it published
// nothing over the level).
func ServerLine(s *phases.ServerLevel) string {
	if s == nil || !s.Available {
		return ""
	}
	parts := []string{fmt.Sprintf("KV max %.0f%%", 100*s.MaxKVCacheUsage),
		fmt.Sprintf("running %.1f, waiting %.1f (max %.0f)", s.MeanRunning, s.MeanWaiting, s.MaxWaiting)}
	switch {
	case s.MaxRetracted != nil:
		parts = append(parts, fmt.Sprintf("retracted max %.0f", *s.MaxRetracted))
	case s.Engine != EngineSGLang:
		parts = append(parts, fmt.Sprintf("preemptions %.0f", s.Preemptions))
	}
	if s.PrefixCacheHitRate != nil {
		parts = append(parts, fmt.Sprintf("prefix cache hit %.1f%%", 100**s.PrefixCacheHitRate))
	}
	if s.SpecAcceptRate != nil || s.SpecAcceptLength != nil {
		spec := "spec decode"
		if s.SpecAcceptRate != nil {
			spec += fmt.Sprintf(" accept %.1f%%", 100**s.SpecAcceptRate)
		}
		if s.SpecAcceptLength != nil {
			spec += fmt.Sprintf(", mean accepted length %.2f", *s.SpecAcceptLength)
		}
		parts = append(parts, spec)
	}
	head := "server"
	if s.Engine != "" {
		head += " (" + s.Engine + ")"
	}
	return head + ": " + strings.Join(parts, " · ")
}

// EngineSGLang is how the server figures name an SGLang server.
const EngineSGLang = "sglang"
