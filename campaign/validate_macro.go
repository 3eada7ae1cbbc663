package campaign

import (
	"fmt"
	"math"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// Validate checks the macro section: every value the sweep takes, before
// any work starts (a level too high for this machine is found here, not
// after a 30-minute load).
func (m Macro) Validate() []error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	switch m.API {
	case macro.APICompletions, macro.APIChat:
	default:
		add(bad("macro.api", "must be completions or chat, got %q", m.API))
	}
	if err := m.validateLevels(); err != nil {
		add(err)
	}
	if m.Requests < 0 {
		add(bad("macro.requests", "must not be negative, got %d", m.Requests))
	}
	if m.Duration.Duration < 0 {
		add(bad("macro.duration", "must not be negative, got %s", m.Duration.Duration))
	}
	if m.Requests == 0 && m.Duration.Duration == 0 {
		add(&KeyError{Key: "macro.requests", Also: "macro.duration",
			Msg: "both 0, so nothing ends a level: set a request count or a duration per level"})
	}
	if m.Warmup < 0 {
		add(bad("macro.warmup", "must not be negative, got %d", m.Warmup))
	}
	if m.InputLen < 1 || m.InputLen > macro.MaxInputLen {
		add(bad("macro.input_len", "want 1 to %d tokens, got %d", macro.MaxInputLen, m.InputLen))
	}
	if m.OutputLen < 2 || m.OutputLen > macro.MaxOutputLen {
		add(bad("macro.output_len", "want 2 (so that TPOT is defined) to %d tokens, got %d", macro.MaxOutputLen, m.OutputLen))
	}
	if err := macro.CheckRate(m.Rate); err != nil {
		add(bad("macro.rate", "%v", err))
	}
	if m.SLO != "" {
		if _, err := macro.ParseSLO(m.SLO); err != nil {
			add(bad("macro.slo", "%v", err))
		}
	}
	errs = append(errs, m.validateWorkload()...)
	errs = append(errs, m.validateSearch()...)
	errs = append(errs, m.Loadgen.validate()...)
	if m.Repeat < 1 || m.Repeat > 100 {
		add(bad("macro.repeat", "want 1 to 100, got %d", m.Repeat))
	}
	return errs
}

// validateLevels checks the concurrency levels: at least one, each at
// least 1 and within what this process can open connections for.
func (m Macro) validateLevels() error {
	if m.Rate > 0 {
		return nil // one open-loop level; the list is not used
	}
	if len(m.Concurrency) == 0 {
		return bad("macro.concurrency", "needs at least one level (e.g. [1, 8, 64])")
	}
	if err := macro.CheckLevels(m.Concurrency); err != nil {
		return bad("macro.concurrency", "%v", err)
	}
	if err := macro.CheckConcurrency(slicesMax(m.Concurrency)); err != nil {
		return bad("macro.concurrency", "%v", err)
	}
	return nil
}

// validateWorkload checks the dataset and the random lengths' spread.
func (m Macro) validateWorkload() []error {
	var errs []error
	switch m.Dataset {
	case "", macro.DatasetRandom:
	case macro.DatasetShareGPT, macro.DatasetJSONL, macro.TraceMooncake, macro.TraceBailian, macro.TraceBurstGPT,
		macro.DatasetConversations, macro.DatasetSessions:
		if m.DatasetFile == "" {
			errs = append(errs, bad("macro.dataset_file", "dataset %s needs a file", m.Dataset))
		}
	default:
		errs = append(errs, bad("macro.dataset", "must be random, sharegpt, jsonl, conversations, sessions, mooncake, bailian or burstgpt, got %q", m.Dataset))
	}
	errs = append(errs, m.validateReplay()...)
	if err := macro.CheckRangeRatio(m.RangeRatio); err != nil {
		errs = append(errs, bad("macro.range_ratio", "%v", err))
	}
	if m.DatasetMax < 0 {
		errs = append(errs, bad("macro.dataset_max", "must not be negative, got %d", m.DatasetMax))
	}
	if m.PrefixLen < 0 || m.PrefixLen > macro.MaxInputLen {
		errs = append(errs, bad("macro.prefix_len", "want 0 to %d tokens, got %d", macro.MaxInputLen, m.PrefixLen))
	}
	return errs
}

// validateReplay checks a trace's speed and window and the multi-turn
// settings.
func (m Macro) validateReplay() []error {
	var errs []error
	if !finite(m.TraceSpeed) || m.TraceSpeed <= 0 || m.TraceSpeed > 1e4 {
		errs = append(errs, bad("macro.trace_speed", "want more than 0 and at most 10000 (1: as recorded), got %g", m.TraceSpeed))
	}
	if m.ThinkTime.Duration > macro.MaxThinkTime {
		errs = append(errs, bad("macro.think_time", "want 0 to %s, got %s", macro.MaxThinkTime, m.ThinkTime.Duration))
	}
	if err := macro.CheckHeaderName(m.SessionHeader); err != nil {
		errs = append(errs, bad("macro.session_header", "%v", err))
	}
	if macro.IsSessionDataset(m.Dataset) && m.Rate > 0 {
		errs = append(errs, &KeyError{Key: "macro.dataset", Also: "macro.rate",
			Msg: fmt.Sprintf("dataset %s runs users (macro.concurrency), not a rate", m.Dataset)})
	}
	return errs
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// validateSearch checks the SLO search and the open loop's schedule
// (their defaults are in the campaign: none of them may be empty or 0 but
// the search itself).
func (m Macro) validateSearch() []error {
	var errs []error
	add := func(key string, err error) { errs = append(errs, bad(key, "%v", err)) }
	if err := macro.CheckSearchMode(m.Search); err != nil {
		add("macro.search", err)
	} else if m.Search != "" && m.SLO == "" {
		add("macro.search", macro.ErrSearchNeedsSLO)
	} else if m.Search == phases.SearchSpeed && !macro.IsTraceFormat(m.Dataset) {
		add("macro.search", fmt.Errorf("speed steps a trace's replay: set macro.dataset to mooncake, bailian or burstgpt"))
	} else if m.Search != "" && m.Search != phases.SearchSpeed && macro.IsTraceFormat(m.Dataset) {
		add("macro.search", fmt.Errorf("%s: a trace replays on its own schedule; speed finds the fastest replay meeting the SLO", m.Search))
	}
	if err := macro.CheckSearchTolerance(m.SearchTolerance); err != nil || m.SearchTolerance == 0 {
		add("macro.search_tolerance", fmt.Errorf("%g: want more than 0 and under 1 (e.g. 0.05)", m.SearchTolerance))
	}
	if err := macro.CheckArrivals(m.Arrivals); err != nil || m.Arrivals == "" {
		add("macro.arrivals", fmt.Errorf("%q: want poisson or constant", m.Arrivals))
	}
	if err := macro.CheckBurstiness(m.Arrivals, m.Burstiness); err != nil {
		add("macro.burstiness", err)
	} else if m.Burstiness == 0 {
		add("macro.burstiness", fmt.Errorf("0: want more than 0 (1 is Poisson; lower is burstier)"))
	}
	if err := macro.CheckLatencyFrom(m.LatencyFrom); err != nil || m.LatencyFrom == "" {
		add("macro.latency_from", fmt.Errorf("%q: want sent or intended", m.LatencyFrom))
	}
	return errs
}
