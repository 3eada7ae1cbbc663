package report

import (
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

func (n *nb) profileRun(r *phaseRun) {
	found := false
	decode := map[int]phases.ProfileSummary{} // the run's decode-only windows, by level
	for _, ev := range r.events {
		if f, ok := ev.Data.(phases.ProfileFailed); ok {
			found = true
			n.profileFailed(r, ev.Time, f)
			continue
		}
		s, ok := ev.Data.(phases.ProfileSummary)
		if !ok {
			continue
		}
		found = true
		if s.Level > 0 && s.Window == phases.WindowDecode {
			decode[s.Level] = s
		}
		n.profileSummary(s, decode, r.params)
	}
	if !found {
		n.ln("No profile summarised.\n")
	}
}

// profileFailed is a capture that failed, unless the run's line already
// says why.
func (n *nb) profileFailed(r *phaseRun, at time.Time, f phases.ProfileFailed) {
	if r.err != "" && strings.Contains(r.err, f.Error) {
		return // the run's line already says it
	}
	n.p("- %s **capture failed** at %s: %s", n.clock(at), f.Step, f.Error)
	if f.ProfilerDisabled && !strings.Contains(f.Error, "profiler") {
		n.p(" (the server was not started with the torch profiler)")
	}
	n.ln("\n")
}

// profileSummary is one capture: its window, its device time, the load it
// saw, then its categories and top kernels.
func (n *nb) profileSummary(s phases.ProfileSummary, decode map[int]phases.ProfileSummary, params any) {
	switch {
	case s.Level > 0 && s.Window == phases.WindowSteady:
		n.p("#### C=%d window, the sweep's own traffic\n\n", s.Level)
	case s.Level > 0 && s.Window == phases.WindowDecode:
		n.p("#### C=%d window, decode only\n\n", s.Level)
	case s.Level > 0:
		n.p("#### C=%d window\n\n", s.Level)
	}
	n.p("From `%s`: %.1f ms of device time", noTicks(s.Source), s.TotalCUDAUs/1000)
	if s.DecodeSteps > 0 {
		n.p(" over %d decode steps", s.DecodeSteps)
		if s.DecodeStepsSource != "" {
			n.p(" (%s)", s.DecodeStepsSource)
		}
	}
	n.p("; communication %.1f%%.\n\n", 100*s.CommunicationShare)
	if s.Window == phases.WindowSteady {
		n.steadySplit(s, decode, params)
	} else if s.GPUPerStepUs > 0 || s.CommPerStepUs > 0 {
		n.p("Per decode step: %.2f ms of device time, %.2f ms of it communication.\n\n", s.GPUPerStepUs/1000, s.CommPerStepUs/1000)
	}
	if s.UnprofiledStepMs > 0 {
		n.p("The same load, profiler off, just before: %.2f ms per step.\n\n", s.UnprofiledStepMs)
	}
	n.profileLoad(s)
	if s.StopS > 0 {
		n.p("stop_profile took %.1f s (trace flush)", s.StopS)
		if s.ProfilerDir != "" {
			n.p("; traces in `%s`", noTicks(s.ProfilerDir))
		}
		n.ln(".\n")
	}
	for _, x := range s.Notes {
		n.p("- %s\n", x)
	}
	if len(s.Notes) > 0 {
		n.ln("")
	}
	n.profileCategories(s)
	n.profileTop(s.Top)
}

// profileLoad is the load a capture saw: its window's streams, or the
// load the profile phase drove.
func (n *nb) profileLoad(s phases.ProfileSummary) {
	if s.Level > 0 {
		load := "a steady load of %d streams"
		switch s.Window {
		case phases.WindowDecode:
			load = "%d streams of long requests (decode steps only)"
		case phases.WindowSteady:
			load = "%d streams of the sweep's own requests"
		}
		n.p("Window: "+load+"; %d requests completed in it", s.Level, s.Requests)
	} else if s.Requests > 0 || len(s.Concurrency) > 0 {
		n.p("Driven load: %d requests per level at concurrency %v", s.Requests, s.Concurrency)
	} else {
		return
	}
	if s.OutputTokens > 0 {
		n.p(", %d output tokens (server usage)", s.OutputTokens)
	}
	n.ln(".\n")
}

// profileCategories is the summary's device time per category, largest
// first, with the time per decode step where the summary has it.
func (n *nb) profileCategories(s phases.ProfileSummary) {
	if len(s.Categories) == 0 {
		return
	}
	cats := make([]string, 0, len(s.Categories))
	for k := range s.Categories {
		cats = append(cats, k)
	}
	sort.Slice(cats, func(i, j int) bool {
		if s.Categories[cats[i]] != s.Categories[cats[j]] {
			return s.Categories[cats[i]] > s.Categories[cats[j]]
		}
		return cats[i] < cats[j]
	})
	perStep := len(s.PerStepUs) > 0
	if perStep {
		n.ln("| category | ms | share | ms per decode step |")
		n.ln("|---|---:|---:|---:|")
	} else {
		n.ln("| category | ms | share |")
		n.ln("|---|---:|---:|")
	}
	for _, k := range cats {
		share := 0.0
		if s.TotalCUDAUs > 0 {
			share = 100 * s.Categories[k] / s.TotalCUDAUs
		}
		if perStep {
			n.p("| %s | %.2f | %.1f%% | %.3f |\n", mdCell(k), s.Categories[k]/1000, share, s.PerStepUs[k]/1000)
		} else {
			n.p("| %s | %.2f | %.1f%% |\n", mdCell(k), s.Categories[k]/1000, share)
		}
	}
	n.ln("")
}

// profileTop is the summary's top kernels (15 at most).
func (n *nb) profileTop(top []phases.Kernel) {
	if len(top) > 0 {
		n.ln("| top kernels | category | self CUDA ms | calls |")
		n.ln("|---|---|---:|---:|")
		for i, k := range top {
			if i == 15 {
				break
			}
			n.p("| `%s` | %s | %.2f | %d |\n", noTicks(mdCell(k.Name)), mdCell(k.Category), k.SelfCUDAUs/1000, k.Calls)
		}
		n.ln("")
	}
}

// steadySplit is a steady window's device time per decode step, split
// into decode (the decode-only window's at the level) and prefill.
func (n *nb) steadySplit(s phases.ProfileSummary, decode map[int]phases.ProfileSummary, params any) {
	m := s.StepMix
	if m == nil || m.Steps <= 0 || s.DecodeSteps <= 0 {
		n.p("Per engine step: %.2f ms of device time (no step mix to find the decode steps).\n\n", s.GPUPerStepUs/1000)
		return
	}
	promptLen := 0.0
	if p, ok := params.(map[string]any); ok {
		promptLen = number(p["input_len"])
	}
	if promptLen <= 0 {
		promptLen = n.bud.promptLen[s.Level] // the sweep's own prompts at the level, as the budget reads them
	}
	nd, mixed := decodeSteps(*m, s.Level, promptLen)
	nDev := nd * float64(s.DecodeSteps) / m.Steps
	how := "prefills in steps of their own"
	if mixed {
		how = "prefill chunks inside the decode steps"
	}
	n.p("Engine steps: %.0f in %.2f s, %.0f of them decode steps (%s); %s prompt and %s generation tokens.",
		m.Steps, m.WindowS, nd, how, units.Thousands(m.PromptTokens), units.Thousands(m.GenerationTokens))
	per := s.TotalCUDAUs / 1000 / nDev
	d, ok := decode[s.Level]
	if !ok || d.GPUPerStepUs <= 0 {
		n.p(" Per decode step: %.2f ms of device time (no decode-only window at C=%d to split it).\n\n", per, s.Level)
		return
	}
	dec := d.GPUPerStepUs / 1000
	n.p(" Per decode step: %.2f ms of device time = decode %.2f ms (the decode-only window's) + prefill %.2f ms (%.1f prompt tokens per decode step).\n\n",
		per, dec, per-dec, m.PromptTokens/nd)
}
