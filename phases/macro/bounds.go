package macro

import (
	"fmt"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// MinBurstiness bounds --burstiness from below: under it most gaps of the
// gamma schedule are shorter than a microsecond, so a level is a few
// bursts of simultaneous requests whose rate is not the one asked
// (--burstiness 1e-300 sent 54.5 req/s for 10).
const MinBurstiness = 0.1

// MaxLevelTime is the longest an open-loop level may be expected to take
// to send its requests: a level is a measurement, not a soak (and the GPU
// sampler keeps 6 h of samples).
const MaxLevelTime = 6 * time.Hour

// CheckLevelTime refuses, before any request, an open-loop level (or a
// rate search's first rung) that its rate cannot finish in time: its
// warm-up and requests expected to take longer than MaxLevelTime (and
// than its Duration), or a Duration in which not even one request is
// expected (--rate 1e-9 and --search rate --rate 1e-6 never made
// progress). The error starts with the rate; checkLevelTime names the
// field.
func (cfg Config) CheckLevelTime() error {
	_, err := cfg.levelTime()
	return err
}

// checkLevelTime is CheckLevelTime naming the field (Rate, SearchFrom).
func (cfg Config) checkLevelTime() error {
	field, err := cfg.levelTime()
	if err != nil {
		return fmt.Errorf("%s %v", field, err)
	}
	return nil
}

// levelTime is CheckLevelTime and the field whose rate it checked.
func (cfg Config) levelTime() (string, error) {
	rate, field := cfg.Rate, "Rate"
	if cfg.Search == phases.SearchRate && cfg.SearchFrom > 0 {
		rate, field = cfg.SearchFrom, "SearchFrom"
	}
	if rate <= 0 {
		return field, nil
	}
	sends := cfg.Warmup + cfg.Requests
	if sends > 0 {
		expect := float64(sends) / rate
		if expect > MaxLevelTime.Seconds() && expect > cfg.Duration.Seconds() {
			return field, fmt.Errorf("%g req/s: a level's %d request(s) (warm-up included) would take about %s to send, more than the %s a level may take; "+
				"raise the rate or send fewer requests", rate, sends, roundTime(expect), MaxLevelTime)
		}
		return field, nil
	}
	if cfg.Duration > 0 && rate*cfg.Duration.Seconds() < 1 {
		return field, fmt.Errorf("%g req/s: a level of %s expects %.2g request(s): not even one; raise the rate or the duration",
			rate, cfg.Duration, rate*cfg.Duration.Seconds())
	}
	return field, nil
}

// roundTime is seconds as a duration a person reads (years past a few
// thousand hours).
func roundTime(s float64) string {
	if s > 1e7 {
		return fmt.Sprintf("%.2g years", s/(365.25*24*3600))
	}
	return time.Duration(s * float64(time.Second)).Round(time.Minute).String()
}
