package macro

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
)

// MaxInputLen bounds the prompt a request is built with, whatever the
// server allows: prompts are built in memory, one per request in flight.
const MaxInputLen = 1 << 20

// fdReserve is the descriptors kept aside from the connections: the
// metrics scraper, the journal, the terminal, the SSH connection.
const fdReserve = 64

// checkFDs refuses a concurrency this process cannot open connections for:
// each request in flight holds one socket. The soft limit is first raised
// to the hard one.
func checkFDs(c int) error {
	if err := CheckConcurrency(c); err != nil {
		return &phases.InputError{Err: fmt.Errorf("--%w", err)}
	}
	return nil
}

// CheckConcurrency refuses a concurrency this process cannot open
// connections for, before any work starts: each request in flight holds
// one socket. The soft limit is first raised to the hard one.
func CheckConcurrency(c int) error {
	soft, hard := fdLimit()
	if soft == 0 {
		return nil
	}
	if need := uint64(c) + fdReserve; need > soft {
		return fmt.Errorf("concurrency %d needs about %d open files (one socket per request in flight), but this process may open %d (ulimit -n; hard limit %d): lower the concurrency or raise the limit",
			c, need, soft, hard)
	}
	return nil
}

// fdFit is the highest concurrency the descriptor limit allows (0: no limit known).
func fdFit() int {
	soft, _ := fdLimit()
	if soft == 0 || soft <= fdReserve {
		return 0
	}
	return int(soft - fdReserve)
}

// checkModelLen refuses lengths the server's max_model_len cannot hold
// (0: the server did not say). It is found once the server answers, so it
// names both ways of setting the lengths: the flags and the campaign keys.
func checkModelLen(cfg Config, model string, maxLen int) error {
	if maxLen <= 0 || cfg.InputLen+cfg.OutputLen <= maxLen || cfg.conv != nil { // sessions: their turns' lengths (checkFits)
		return nil
	}
	return &phases.InputError{Err: fmt.Errorf("input %d + output %d = %d tokens, more than %s's max_model_len of %d on this server (--input-len and --output-len, or macro.input_len and macro.output_len)",
		cfg.InputLen, cfg.OutputLen, cfg.InputLen+cfg.OutputLen, model, maxLen)}
}
