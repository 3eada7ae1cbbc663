package vllmemu

import (
	"fmt"
	"time"
)

// Modes name emulators whose throughput stops growing for one reason each,
// at the demo's lengths (128-token prompts, 32-token answers): what the
// sweep's verdict tells apart.
var Modes = []string{"kv", "seqs", "step", "noisy", "spec"}

// Mode is the configuration of a named mode on top of base:
//   - kv: a KV cache of 8,192 tokens (about 50 requests), so requests wait
//     and running ones are preempted; seats are plenty;
//   - seqs: 64 seats (max_num_seqs) and a roomy KV cache;
//   - step: seats and KV cache plenty, each running request adds 1 ms to
//     the step, so the step itself limits throughput;
//   - noisy: the defaults with every step up to 30% longer or shorter;
//   - spec: speculative decoding, two draft tokens per step, each accepted
//     with a chance of 0.7 (its /metrics carries the drafts and acceptance).
func Mode(name string, base Config) (Config, error) {
	c := base
	switch name {
	case "kv":
		c.KVCacheTokens, c.MaxNumSeqs = 8192, 1024
	case "seqs":
		c.MaxNumSeqs = 64
	case "step":
		c.MaxNumSeqs, c.StepTime, c.StepPerSeq = 1024, 4*time.Millisecond, time.Millisecond
	case "noisy":
		c.Jitter = 0.3
	case "spec":
		c.TokensPerStep, c.SpecAcceptRate = 3, 0.7
	default:
		return c, fmt.Errorf("emulator mode %q: want one of kv, seqs, step, noisy, spec", name)
	}
	return c, nil
}
