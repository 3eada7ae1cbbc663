package macropane

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// verdictLines are the plateau's banner: where it is, its class and the
// SLO's largest concurrency on the first line; the verdict's evidence
// (what to do) wrapped under it, and whether the plateau is inside the
// noise of repeated runs.
func (m *Model) verdictLines(p *phases.Plateau) []string {
	s := m.d.Styles
	head := fmt.Sprintf("plateau at C=%d: %s tok/s", p.Concurrency, units.Thousands(p.OutputThroughput))
	if p.Reason != "" {
		head += " — " + p.Reason
	} else {
		head += " — doubling C adds <10%"
	}
	if t := m.sloShort(); t != "" {
		head += " · " + t
	}
	out := m.wrapped(s.Good, head)
	why := strings.TrimPrefix(p.Evidence, fmt.Sprintf("plateau at C=%d: ", p.Concurrency))
	if i := strings.LastIndex(why, " — "); i > 0 {
		// What to do first, so a narrow pane keeps it.
		why = why[i+len(" — "):] + ": " + why[:i]
	}
	if p.Noise != "" {
		why = strings.TrimSpace(why + "; " + p.Noise)
	}
	if why == "" {
		return out
	}
	return append(out, m.wrapped(s.Subtle, why)...)
}

// sloShort is the largest concurrency, rate or replay speed meeting the
// SLO, in a few words.
func (m *Model) sloShort() string {
	if s := m.search; s != nil && s.Done && s.Mode == phases.SearchConcurrency {
		return fmt.Sprintf("SLO limit C %s", s.Interval())
	}
	if m.slo == nil {
		return ""
	}
	switch {
	case m.slo.MaxSpeed > 0:
		return fmt.Sprintf("SLO met up to %.3g×", m.slo.MaxSpeed)
	case m.slo.MaxRate > 0:
		return fmt.Sprintf("SLO met up to %.4g req/s", m.slo.MaxRate)
	case m.slo.MaxConcurrency > 0:
		return fmt.Sprintf("SLO met up to C=%d", m.slo.MaxConcurrency)
	}
	return "no level met the SLO"
}

// levelRates are, while no level runs, the last level's client and server
// tok/s over the same throughput window (the per-second figures of a
// level's last second and of the server's last scrape cover different
// seconds, so they are not set side by side then).
func (m *Model) levelRates() (client float64, srv, srvShort string, ok bool) {
	if m.cur != nil || len(m.levels) == 0 {
		return 0, "", "", false
	}
	lv := m.levels[len(m.levels)-1]
	sl := lv.Server
	if sl == nil || !sl.Available || sl.GenerationWindow == "" {
		return 0, "", "", false
	}
	mark := ""
	if !sl.TokensAgree {
		mark = " ≠"
	}
	r := units.Rate(sl.GenerationTokS)
	client = lv.OutputThroughput
	if sl.WindowS > 0 && sl.WindowClientTokens > 0 {
		// This client's tokens over exactly the seconds the server's span.
		client = float64(sl.WindowClientTokens) / sl.WindowS
	}
	return client, "server " + r + mark, "srv " + r + mark, true
}

// disagreement is a short line for the latest level whose server and
// client tokens are more than 2% apart: by how much, and the likely why.
func (m *Model) disagreement() string {
	for i := len(m.levels) - 1; i >= 0; i-- {
		lv := m.levels[i]
		sl := lv.Server
		if sl == nil || sl.GenerationWindow == "" {
			continue
		}
		if sl.TokensAgree || sl.TokenAgreement == "" || sl.WindowClientTokens <= 0 {
			return ""
		}
		d := 100 * (sl.WindowGenerationTokens/float64(sl.WindowClientTokens) - 1)
		why := sl.TokenAgreement
		if j := strings.LastIndex(why, "): "); j >= 0 {
			why = why[j+3:]
		}
		return fmt.Sprintf("C=%d: server tokens %+.0f%% against this client's — %s", lv.Concurrency, d, why)
	}
	return ""
}

// searchLines are the SLO search's banner: as it goes, the interval it has
// and its latest verdict; once done, its answer.
func (m *Model) searchLines() []string {
	st, s := m.d.Styles, m.search
	if s.Done {
		return m.wrapped(st.Good, "search: "+s.Text)
	}
	text := fmt.Sprintf("searching the largest %s meeting %s: limit in %s after %d run(s)", s.Unit, s.SLO, s.Interval(), s.Runs)
	if n := len(s.Steps); n > 0 {
		last := s.Steps[n-1]
		verdict := "met"
		if !last.Met {
			verdict = "missed (" + last.Why + ")"
		}
		text += fmt.Sprintf(" · %s %s: %.0f%% within", s.ValueText(last.Value), verdict, 100*last.Share)
	}
	return m.wrapped(st.Subtle, text)
}
