package macro

import (
	"errors"
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// This file checks the values an operator gives the sweep, from a flag or
// the campaign file: the campaign's validation calls the same functions,
// so a value is refused when the file is read, before any server is
// started, and never half-way through a sweep or when its result is
// written. The errors name the value, not the flag or key: callers add it.

// MaxConcurrency bounds a concurrency level: each request in flight holds
// its own connection, and one client address cannot open many more than
// 65,536 to one server port.
const MaxConcurrency = 1 << 16

// MaxOutputLen bounds the output length a request asks for (max_tokens),
// from --output-len or a dataset's output_len.
const MaxOutputLen = 1 << 20

// MaxRate bounds an open-loop rate in requests per second.
const MaxRate = 100_000

// ParseConcurrency reads a list of levels like "1,2,4,8" (each 1 to
// MaxConcurrency, none twice).
func ParseConcurrency(s string) ([]int, error) {
	return units.ParseInts(s, 1, MaxConcurrency)
}

// CheckLevels checks a list of levels as ParseConcurrency reads them.
func CheckLevels(levels []int) error {
	return units.CheckInts(levels, 1, MaxConcurrency)
}

// CheckRate checks an open-loop rate: 0 (a concurrency sweep) or a finite
// number of requests per second up to MaxRate.
func CheckRate(r float64) error {
	if r == 0 {
		return nil
	}
	if err := units.CheckFloat(r, 0, MaxRate); err != nil || r < 0 {
		return fmt.Errorf("%g: want 0 (a concurrency sweep) or a number of requests per second up to %d", r, MaxRate)
	}
	return nil
}

// CheckRangeRatio checks a random range ratio: at least 0 and under 1.
func CheckRangeRatio(r float64) error {
	if units.CheckFloat(r, 0, 1) != nil || r == 1 {
		return fmt.Errorf("%g: want 0 or more and under 1", r)
	}
	return nil
}

// errNegative is a count or duration below zero.
var errNegative = errors.New("must not be negative")

// checkValues checks every value of cfg but the URL (checked by
// Validate) and the values it must have (checkRequired); each error names
// its field.
func (cfg Config) checkValues() error {
	switch cfg.API {
	case "", APICompletions, APIChat:
	default:
		return fmt.Errorf("API %q: want completions or chat", cfg.API)
	}
	if err := CheckRate(cfg.Rate); err != nil {
		return fmt.Errorf("Rate %v", err)
	}
	if err := CheckLevels(cfg.Concurrency); err != nil {
		return fmt.Errorf("Concurrency: %v", err)
	}
	if err := cfg.checkCounts(); err != nil {
		return err
	}
	if cfg.Timeout < 0 {
		return fmt.Errorf("Timeout %s: %w", cfg.Timeout, errNegative)
	}
	if cfg.Repeat < 0 || cfg.Repeat > 100 {
		return fmt.Errorf("Repeat %d: want 1 to 100", cfg.Repeat)
	}
	if strings.TrimSpace(cfg.SLO) != "" {
		if _, err := ParseSLO(cfg.SLO); err != nil {
			return fmt.Errorf("SLO: %v", err)
		}
	}
	if err := cfg.checkOpenLoop(); err != nil {
		return err
	}
	if err := cfg.checkLevelTime(); err != nil {
		return err
	}
	if err := CheckRangeRatio(cfg.RangeRatio); err != nil {
		return fmt.Errorf("RangeRatio %v", err)
	}
	if cfg.PrefixLen < 0 || cfg.PrefixLen > MaxInputLen {
		return fmt.Errorf("PrefixLen %d: want 0 to %d tokens", cfg.PrefixLen, MaxInputLen)
	}
	if cfg.DatasetMax < 0 {
		return fmt.Errorf("DatasetMax %d: %w", cfg.DatasetMax, errNegative)
	}
	return cfg.checkSessions()
}

// checkSessions checks the multi-turn settings: a think time within
// bounds, a header name HTTP allows, and a multi-turn dataset run by
// users (a concurrency), not at a rate, with nothing of the random
// prompts' shaping.
func (cfg Config) checkSessions() error {
	if cfg.ThinkTime < 0 || cfg.ThinkTime > MaxThinkTime {
		return fmt.Errorf("ThinkTime %s: want 0 to %s", cfg.ThinkTime, MaxThinkTime)
	}
	if err := CheckHeaderName(cfg.SessionHeader); err != nil {
		return fmt.Errorf("SessionHeader %v", err)
	}
	if !IsSessionDataset(cfg.Dataset) {
		return nil
	}
	switch {
	case cfg.Rate > 0 || cfg.Search == phases.SearchRate || cfg.Search == phases.SearchSpeed:
		return fmt.Errorf("Dataset %s: sessions run as users (a concurrency), not at a rate", cfg.Dataset)
	case cfg.RangeRatio > 0 || cfg.PrefixLen > 0:
		return fmt.Errorf("Dataset %s: the range ratio and the prefix length shape random prompts, not a dataset's turns", cfg.Dataset)
	}
	return nil
}

// CheckHeaderName checks an HTTP header name ("" is none): 1 to 128 of
// the characters a header name may hold.
func CheckHeaderName(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > 128 {
		return fmt.Errorf("%.20q…: want a header name of at most 128 characters", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return fmt.Errorf("%q: not a header name (letters, digits and !#$%%&'*+-.^_`|~)", name)
		}
	}
	return nil
}

// checkCounts refuses negative counts and durations and lengths out of
// range; each error names its field.
func (cfg Config) checkCounts() error {
	for _, c := range []struct {
		name string
		v    int64
		text string
	}{
		{"Requests", int64(cfg.Requests), fmt.Sprint(cfg.Requests)},
		{"Duration", int64(cfg.Duration), cfg.Duration.String()},
		{"Warmup", int64(cfg.Warmup), fmt.Sprint(cfg.Warmup)},
		{"InputLen", int64(cfg.InputLen), fmt.Sprint(cfg.InputLen)},
		{"OutputLen", int64(cfg.OutputLen), fmt.Sprint(cfg.OutputLen)},
	} {
		if c.v < 0 {
			return fmt.Errorf("%s %s: %w", c.name, c.text, errNegative)
		}
	}
	switch {
	case cfg.OutputLen == 1:
		return errors.New("OutputLen 1: must be at least 2 so that TPOT is defined")
	case cfg.OutputLen > MaxOutputLen:
		return fmt.Errorf("OutputLen %d: at most %d tokens", cfg.OutputLen, MaxOutputLen)
	case cfg.InputLen > MaxInputLen:
		return fmt.Errorf("InputLen %d: at most %d tokens (prompts are built in memory, one per request in flight)", cfg.InputLen, MaxInputLen)
	}
	return nil
}
