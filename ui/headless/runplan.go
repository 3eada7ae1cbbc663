package headless

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/load"
)

// loadSteps are the steps that load the model when they run.
var loadSteps = map[string]bool{campaignrun.Serve: true, campaignrun.Restart: true}

// runPlan says, before the run starts, its order and why, the steps it
// will do (the loads marked), and the time expected: each step's time
// when the journal has it, a load's the simulated host's load time, the
// sweep its levels times their duration.
func runPlan(w io.Writer, c *campaign.Campaign, cfg campaignrun.Config) {
	if w == nil {
		return
	}
	order, why := campaignrun.OrderFor(c.Run.Order, c.Server.Launch)
	steps := campaignrun.Remaining(cfg)
	took := campaignrun.LastTook(cfg.Prior)
	loads := plannedLoads(steps, cfg.Leave, order)
	var total time.Duration
	var parts, unknown []string
	for _, s := range steps {
		if s == campaignrun.Notebook {
			v := planVariants(c, cfg, took)
			parts, loads, total, unknown = append(parts, v.parts...), loads+v.loads, total+v.total, append(unknown, v.unknown...)
		}
		label, d, known := planStep(s, c, took)
		switch {
		case known:
			total += d
		case s != campaignrun.Doctor && s != campaignrun.Notebook && s != campaignrun.LeaveServer:
			unknown = append(unknown, s)
		}
		parts = append(parts, label)
	}
	fmt.Fprintf(w, "profdeck run: plan, %s order (%s): %s\n", order, why, strings.Join(parts, " → "))
	line := fmt.Sprintf("profdeck run: %d load(s); expected %s", loads, shortDur(total))
	if len(unknown) > 0 {
		line += " and the time of " + strings.Join(unknown, ", ") + " (not in the journal yet)"
	}
	fmt.Fprintln(w, line)
}

// planStep is a step's label in the plan (a load marked, its expected
// time when known) and that time.
func planStep(s string, c *campaign.Campaign, took map[string]time.Duration) (string, time.Duration, bool) {
	d, ok := expectedStep(s, c, took)
	label := s
	if loadSteps[s] {
		label += " [load]"
	}
	if ok {
		label += " ~" + shortDur(d)
	}
	return label, d, ok
}

// variantsPlan is the part of the plan the variants take.
type variantsPlan struct {
	parts, unknown []string
	loads          int
	total          time.Duration
}

// planVariants are the variants still to serve (those a journal finished
// are not served again), each a load (none for one on the server of the
// variant before it) and its steps, in the order the run serves them.
func planVariants(c *campaign.Campaign, cfg campaignrun.Config, took map[string]time.Duration) variantsPlan {
	var p variantsPlan
	done := campaignrun.VariantsDone(cfg.Prior)
	steps := cfg.VariantSteps
	if len(steps) == 0 {
		steps = []string{campaignrun.Macro}
	}
	base := c.Server.Launch
	var prev *phases.VariantSpec
	for _, v := range campaignrun.OrderVariants(base, cfg.Variants) {
		if done[v.Name] {
			continue
		}
		label, d, ok := planStep(campaignrun.Serve, c, took)
		switch {
		case campaignrun.SharesLoad(base, prev, v):
			label = v.Name + ": on " + prev.Name + "'s server"
		case ok:
			p.loads++
			p.total += d
			label = v.Name + ": " + label
		default:
			p.loads++
			p.unknown = append(p.unknown, v.Name+"'s load")
			label = v.Name + ": " + label
		}
		prev = &v
		for _, s := range steps {
			l, d, ok := planStep(s, c, took)
			label += ", " + l
			if ok {
				p.total += d
			} else {
				p.unknown = append(p.unknown, v.Name+"'s "+s)
			}
		}
		p.parts = append(p.parts, label)
	}
	return p
}

// plannedLoads counts the loads of the steps to do; the classic order's
// restart without the profiler at the end is one more.
func plannedLoads(steps []string, leave, order string) int {
	n := campaignrun.Loads(steps, leave)
	if order == campaignrun.OrderClassic && !contains(steps, campaignrun.Restart) && contains(steps, campaignrun.FreeGPUs) && leave != campaignrun.LeaveStopped {
		n++ // the GPUs freed, the server put back as asked
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// expectedStep is a step's expected time, when something says it.
func expectedStep(s string, c *campaign.Campaign, took map[string]time.Duration) (time.Duration, bool) {
	if loadSteps[s] && c.Host == "sim" && c.Sim.LoadTime.Duration > 0 {
		return c.Sim.LoadTime.Duration, true
	}
	if d, ok := took[s]; ok {
		return d, true
	}
	if s == campaignrun.Macro && c.Macro.Duration.Duration > 0 {
		return time.Duration(len(c.Macro.Concurrency)) * c.Macro.Duration.Duration, true
	}
	return 0, false
}

// shortDur is a duration rounded to the second ("1m27s").
func shortDur(d time.Duration) string {
	return d.Round(time.Second).String()
}

// runTook is the line after the steps table: the run's wall time (its
// steps' first start to last end) and the loads it did.
func runTook(w io.Writer, res *campaignrun.Result) {
	var first, last time.Time
	loads := 0
	for _, s := range res.Steps {
		if s.Earlier || s.Started.IsZero() {
			continue
		}
		if first.IsZero() || s.Started.Before(first) {
			first = s.Started
		}
		if s.Finished.After(last) {
			last = s.Finished
		}
		if s.State != "skipped" && (loadSteps[s.Name] && !strings.HasPrefix(s.Reason, "already serving") ||
			s.Name == campaignrun.LeaveServer && strings.HasPrefix(s.Reason, "restarted")) {
			loads++
		}
	}
	if first.IsZero() {
		return
	}
	fmt.Fprintf(w, "wall time %s, %d load(s)\n", shortDur(last.Sub(first)), loads)
}

// orderCheck is the doctor's line on the order `profdeck run` takes on
// this host and why; with the one-load order, the profiler setting the
// launch gets for the vLLM version (the campaign's, else the one the
// engine check found).
func orderCheck(c *campaign.Campaign, checks []phases.DoctorCheck) phases.DoctorCheck {
	order, why := campaignrun.OrderFor(c.Run.Order, c.Server.Launch)
	ch := phases.DoctorCheck{Name: "order", Status: phases.CheckOK, Found: "run takes the " + order + " order: " + why}
	if order != campaignrun.OrderOneLoad || c.ServerEngine() == campaign.EngineSGLang {
		return ch
	}
	v := c.Server.Version
	for _, k := range checks {
		if v == "" {
			v = campaignrun.DoctorVersion(k)
		}
	}
	if v == "" {
		ch.Found += "; the vLLM version is not known: the launch gets --profiler-config (vLLM 0.13 and later)"
		ch.Fix = "an older vLLM refuses that flag: set server.version, or run.order: classic"
		return ch
	}
	flags, _ := load.ProfilerArgsFor("vllm", v, c.Server.ProfilerDir)
	how := "VLLM_TORCH_PROFILER_DIR"
	if len(flags) > 0 {
		how = "--profiler-config"
	}
	ch.Found += "; vLLM " + v + ": the launch gets " + how
	return ch
}
