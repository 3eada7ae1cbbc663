package sim

import (
	"encoding/json"
	"regexp"
	"strconv"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// DefaultSpecAcceptRate is the chance each draft token is accepted when a
// launch turns speculative decoding on and the deployment's emulator sets
// no rate of its own.
const DefaultSpecAcceptRate = 0.7

// draftCosts is what drafting adds to a step, as a fraction of it, by
// --speculative-config method; other methods cost draftCostOther.
var draftCosts = map[string]float64{"ngram": 0.02, "eagle": 0.10, "eagle3": 0.10, "mtp": 0.08}

const draftCostOther = 0.15

var (
	reMaxSeqs    = regexp.MustCompile(`--max-num-seqs[= ]+(\d+)`)
	reMaxBatched = regexp.MustCompile(`--max-num-batched-tokens[= ]+(\d+)`)
	reNoChunked  = regexp.MustCompile(`--no-enable-chunked-prefill\b`)
	reSpecConfig = regexp.MustCompile(`--speculative-config[= ]+'([^']*)'`)
)

// LaunchConfig is the emulator's configuration for a server launched with
// cmd: base, with the scheduling flags cmd sets — --max-num-seqs (requests
// running at once), --max-num-batched-tokens (prompt tokens one step
// prefills), --no-enable-chunked-prefill (whole prefills, no token budget)
// and --speculative-config (k draft tokens: up to k+1 tokens a step, each
// draft accepted at base's rate, every step costing 1 + the method's draft
// cost).
func LaunchConfig(cmd string, base vllmemu.Config) vllmemu.Config {
	c := base
	if n, ok := flagInt(reMaxSeqs, cmd); ok {
		c.MaxNumSeqs = n
	}
	if n, ok := flagInt(reMaxBatched, cmd); ok {
		c.MaxBatchedTokens = n
	}
	if reNoChunked.MatchString(cmd) {
		c.MaxBatchedTokens = 0
	}
	if k, method, ok := specConfig(cmd); ok {
		c.TokensPerStep = k + 1
		if c.SpecAcceptRate == 0 {
			c.SpecAcceptRate = DefaultSpecAcceptRate
		}
		c = withDraftCost(c, DraftCost(method))
	}
	return c
}

// DraftCost is what drafting adds to one step, as a fraction of it, for a
// --speculative-config method.
func DraftCost(method string) float64 {
	if f, ok := draftCosts[method]; ok {
		return f
	}
	return draftCostOther
}

// withDraftCost makes every step of c cost 1+f times as much.
func withDraftCost(c vllmemu.Config, f float64) vllmemu.Config {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * (1 + f)) }
	if step := c.StepFunc; step != nil {
		c.StepFunc = func(batch, prefill int) time.Duration { return scale(step(batch, prefill)) }
		return c
	}
	c.StepTime, c.StepPerSeq = scale(or(c.StepTime, vllmemu.DefaultStepTime)), scale(or(c.StepPerSeq, vllmemu.DefaultStepPerSeq))
	c.PrefillPerToken = scale(or(c.PrefillPerToken, vllmemu.DefaultPrefillPerToken))
	return c
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// flagInt reads a flag's positive integer value from cmd.
func flagInt(re *regexp.Regexp, cmd string) (int, bool) {
	m := re.FindStringSubmatch(cmd)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil && n > 0
}

// specConfig reads --speculative-config's method and draft tokens.
func specConfig(cmd string) (k int, method string, ok bool) {
	m := reSpecConfig.FindStringSubmatch(cmd)
	if m == nil {
		return 0, "", false
	}
	var sc struct {
		Method string `json:"method"`
		K      int    `json:"num_speculative_tokens"`
	}
	if json.Unmarshal([]byte(m[1]), &sc) != nil || sc.K <= 0 {
		return 0, "", false
	}
	return sc.K, sc.Method, true
}
