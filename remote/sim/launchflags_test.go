package sim

import (
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// A launch's scheduling flags set the emulator's: the batch cap, the
// prefill token budget (none without chunked prefill) and speculative
// decoding (k drafts: k+1 tokens a step at most, each step 1 + the
// method's draft cost as long).
func TestLaunchConfig(t *testing.T) {
	step := func(batch, prefill int) time.Duration {
		return 10*time.Millisecond + time.Duration(batch)*time.Millisecond
	}
	base := vllmemu.Config{StepFunc: step, MaxBatchedTokens: DefaultMaxBatchedTokens}
	c := LaunchConfig(`vllm serve m --max-num-seqs 3 --max-num-batched-tokens=512 --speculative-config '{"method":"ngram","num_speculative_tokens":3}'`, base)
	if c.MaxNumSeqs != 3 || c.MaxBatchedTokens != 512 || c.TokensPerStep != 4 || c.SpecAcceptRate != DefaultSpecAcceptRate {
		t.Errorf("cap %d budget %d tokens/step %d rate %v", c.MaxNumSeqs, c.MaxBatchedTokens, c.TokensPerStep, c.SpecAcceptRate)
	}
	// step(2, 0) = 12 ms; ngram's draft cost 2%: 12.24 ms.
	if got, want := c.StepFunc(2, 0), 12240*time.Microsecond; got != want {
		t.Errorf("step with drafts %v, want %v", got, want)
	}
	c = LaunchConfig(`vllm serve m --no-enable-chunked-prefill --speculative-config '{"method":"eagle","num_speculative_tokens":2}'`,
		vllmemu.Config{SpecAcceptRate: 0.5})
	// Without a step function the default step times are scaled: 12.5 ms × 1.1.
	if c.MaxBatchedTokens != 0 || c.TokensPerStep != 3 || c.SpecAcceptRate != 0.5 || c.StepTime != 13750*time.Microsecond {
		t.Errorf("budget %d tokens/step %d rate %v step %v", c.MaxBatchedTokens, c.TokensPerStep, c.SpecAcceptRate, c.StepTime)
	}
	for _, cmd := range []string{"vllm serve m", `vllm serve m --speculative-config '{bad'`, "vllm serve m --max-num-seqs 0"} {
		if c := LaunchConfig(cmd, base); c.MaxNumSeqs != 0 || c.TokensPerStep != 0 || c.MaxBatchedTokens != DefaultMaxBatchedTokens {
			t.Errorf("%s: changed %+v", cmd, c)
		}
	}
}

// The simulated deployment's server steps with the settings of its
// latest launch, and a launch without them goes back to the deployment's.
func TestLaunchSetsEmulator(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 100 * time.Millisecond})
	launch := func(cmd string) vllmemu.Config {
		if err := d.Run(ctx, cmd+" > /var/log/vllm/server.log 2>&1 &", nil, nil); err != nil {
			t.Fatal(err)
		}
		return d.Emulator().Live()
	}
	c := launch(`vllm serve m --max-num-seqs 7 --speculative-config '{"method":"ngram","num_speculative_tokens":2}'`)
	if c.MaxNumSeqs != 7 || c.TokensPerStep != 3 {
		t.Errorf("cap %d tokens/step %d, want 7 and 3", c.MaxNumSeqs, c.TokensPerStep)
	}
	c = launch("vllm serve m")
	if c.MaxNumSeqs != vllmemu.DefaultMaxNumSeqs || c.TokensPerStep != 1 || c.MaxBatchedTokens != DefaultMaxBatchedTokens {
		t.Errorf("plain launch: cap %d tokens/step %d budget %d", c.MaxNumSeqs, c.TokensPerStep, c.MaxBatchedTokens)
	}
}
