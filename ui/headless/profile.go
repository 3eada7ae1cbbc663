package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report"
)

// ProfileMain is `profdeck profile`: one capture against the campaign's
// server. Steps go to stderr (and to --jsonl as they happen), the summary
// to stdout, the summary document to --json.
func ProfileMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, f := newProfile(stdout, stderr)
	if err := c.Parse(args); err != nil {
		return c.Exit(ctx, err)
	}
	cfg, camp, err := f.plan(c)
	if err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, capture(ctx, c, camp, cfg))
}

// profileFlags are the profile command's own flags.
type profileFlags struct {
	levels, concurrency string
	stopTimeout         time.Duration
	top                 int
	steady              bool
}

// newProfile is the profile command with its flags.
func newProfile(stdout, stderr io.Writer) (*Command, *profileFlags) {
	c := New("profile", "profdeck profile [-c FILE] [--host HOST] [--levels 1,C] [--steps N] [--steady] [--loadgen here|host] [--json FILE|-] [--jsonl FILE]\n\n"+
		"Captures a torch profile of the running server (it must have been started with the torch profiler),\n"+
		"one window of N engine steps per concurrency level, and summarises where the GPU time of a decode\n"+
		"step went at each level.", stdout, stderr)
	f := &profileFlags{}
	fs := c.Flags
	fs.Int("requests", 0, "not used: each level's window is bounded by --steps (kept so older scripts run)")
	fs.StringVar(&f.levels, "levels", "", "comma-separated concurrency levels, one capture window each (default 1, or --concurrency)")
	fs.StringVar(&f.concurrency, "concurrency", "1", "the same as --levels")
	fs.Int("steps", 0, "engine steps each level's window records (default: the campaign's profile.steps, else 50)")
	fs.String("profiler-dir", "", "the server's torch profiler directory on the host (default: the campaign's server.profiler_dir, else "+campaign.DefaultProfilerDir+")")
	fs.DurationVar(&f.stopTimeout, "stop-timeout", campaign.DefaultProfileStopTimeout, "how long to wait for stop_profile while traces flush")
	fs.IntVar(&f.top, "top", campaign.DefaultProfileTop, "how many kernels to list")
	fs.BoolVar(&f.steady, "steady", false, "also a window of the sweep's own requests at each level, beside the decode-only one (profdeck run takes both)")
	fs.String("loadgen", "", "where the windows' load is sent from: here, or host (the GPU host; default: the campaign's macro.loadgen)")
	c.flagProgress()
	return c, f
}

// profileBinds are the profile command's flags that set campaign keys.
var profileBinds = []campaign.Flag{
	{Name: "requests", Key: "profile.requests"}, {Name: "steps", Key: "profile.steps"},
	{Name: "profiler-dir", Key: "server.profiler_dir"}, {Name: "loadgen", Key: "macro.loadgen.mode"},
}

// profilePlan is the capture's configuration: the campaign with the flags
// given over it and checked, the levels (--levels, else C=1 and the
// plateau of the campaign's journal).
func (f *profileFlags) plan(c *Command) (profile.Config, *campaign.Campaign, error) {
	conc, flag, stopTimeout, top := f.levels, "--levels", f.stopTimeout, f.top
	explicit := c.Set("levels") || c.Set("concurrency")
	if !c.Set("levels") {
		conc, flag = f.concurrency, "--concurrency"
	}
	levels, err := profile.ParseLevels(conc)
	if err != nil {
		return profile.Config{}, nil, BadInput("%s: %v", flag, err)
	}
	if stopTimeout <= 0 {
		return profile.Config{}, nil, BadInput("--stop-timeout: must be more than 0, got %s", stopTimeout)
	}
	if top < 1 {
		return profile.Config{}, nil, BadInput("--top: must be at least 1, got %d", top)
	}
	camp, _, err := c.Campaign(profileBinds...)
	if err != nil {
		return profile.Config{}, nil, err
	}
	cfg := camp.ProfileConfig(camp.APIKey())
	if p := journalPlateau(camp); !explicit && p > 1 {
		// C=1 and the plateau the campaign's last sweep named.
		if err := profile.CheckLevels([]int{p}); err != nil {
			fmt.Fprintf(c.Stderr, "levels: C=1 only: the plateau C=%d in %s is not a level a capture takes (%v)\n", p, camp.JournalPath(), err)
		} else {
			levels = []int{1, p}
			fmt.Fprintf(c.Stderr, "levels: C=1 and the plateau's C=%d from %s\n", p, camp.JournalPath())
		}
	}
	cfg.Concurrency, cfg.StopTimeout, cfg.Top, cfg.Steady = levels, stopTimeout, top, f.steady
	return cfg, camp, nil
}

// capture opens the host (the simulated one started with the profiler) and
// runs the capture.
func capture(ctx context.Context, c *Command, camp *campaign.Campaign, cfg profile.Config) error {
	h, err := c.OpenHost(ctx, camp, func(o *hosts.Options) {
		if o.Sim.LoadTime == 0 {
			o.Sim.LoadTime = 3 * time.Second // a capture's simulated restart, unless the campaign says
		}
	})
	if err != nil {
		return err
	}
	defer h.Close()
	cfg.Host = h
	cfg.Load = onhost.LoadFor(camp.Macro.Loadgen.Mode, onhost.Options{Host: h})
	if d, ok := h.(*sim.Deployment); ok {
		fmt.Fprintln(c.Stderr, "SIMULATED deployment: starting its server with the torch profiler")
		if err := profile.PrepareSim(ctx, d, cfg.ProfilerDir); err != nil {
			return err
		}
		cfg.URL = "http://" + d.Options().ServerAddr
	}
	events := make(chan phases.Event, 64)
	observe, stopProgress := c.startProgress(ctx)
	defer stopProgress()
	var wg sync.WaitGroup
	wg.Go(func() { printSteps(c, events, observe) })
	levels, err := profile.CaptureLevels(ctx, cfg, &phases.Emitter{Out: events})
	close(events)
	wg.Wait()
	for i := range levels {
		printSummary(c.Human(), &levels[i], remote.IsSimulated(h))
	}
	if err != nil {
		if len(levels) > 0 {
			// Keep the levels that were captured.
			_ = c.WriteJSON(levels)
		}
		if errors.Is(err, profile.ErrProfilerDisabled) || errors.Is(err, profile.ErrServerDown) {
			return &StepFailedError{Err: err}
		}
		return err
	}
	return c.WriteJSON(levels)
}

// printSteps writes the capture's steps to stderr as they come (and every
// step event to --jsonl).
func printSteps(c *Command, events <-chan phases.Event, observe func(phases.Event)) {
	last := ""
	for ev := range events {
		observe(ev)
		c.WriteLine(ev)
		st, ok := ev.Data.(phases.ProfileStep)
		if !ok {
			continue
		}
		line := st.Step + ": " + st.Detail
		switch {
		case st.Done:
			fmt.Fprintf(c.Stderr, "%-13s done in %5.1fs  %s\n", st.Step, st.ElapsedS, st.Detail)
		case st.ElapsedS == 0 && line != last:
			fmt.Fprintf(c.Stderr, "%-13s %s\n", st.Step, st.Detail)
		case st.Step == "stop_profile" && int(st.ElapsedS)%15 == 0 && int(st.ElapsedS) > 0:
			fmt.Fprintf(c.Stderr, "%-13s still flushing after %s\n", st.Step, units.Duration(st.ElapsedS))
		}
		last = line
	}
}

// printSummary writes the human-readable summary.
func printSummary(w io.Writer, s *phases.ProfileSummary, simulated bool) {
	if simulated {
		fmt.Fprintln(w, "SIMULATED")
	}
	if s.Level > 0 {
		kind := ""
		if s.Window == phases.WindowSteady {
			kind = ", the sweep's own traffic"
		}
		fmt.Fprintf(w, "== C=%d%s ==\n", s.Level, kind)
	}
	fmt.Fprintf(w, "source: %s\n", s.Source)
	fmt.Fprintf(w, "GPU time %s in %d kernels; communication %.1f%% of it\n", units.Us(s.TotalCUDAUs), s.KernelCount, 100*s.CommunicationShare)
	if s.DecodeSteps > 0 {
		fmt.Fprintf(w, "per decode step: %s GPU, %s communication (%d steps: %s)\n", units.Us(s.GPUPerStepUs), units.Us(s.CommPerStepUs), s.DecodeSteps, s.DecodeStepsSource)
	}
	for _, c := range profile.Categories {
		v := s.Categories[c]
		perStep := ""
		if ps, ok := s.PerStepUs[c]; ok {
			perStep = units.Us(ps) + "/step"
		}
		fmt.Fprintf(w, "  %-14s %12s %6.1f%% %14s\n", c, units.Us(v), pctOf(v, s.TotalCUDAUs), perStep)
	}
	fmt.Fprintln(w, "top kernels by self CUDA time:")
	for _, k := range s.Top {
		fmt.Fprintf(w, "  %12s %6.1f%% %8d  %-13s %s\n", units.Us(k.SelfCUDAUs), pctOf(k.SelfCUDAUs, s.TotalCUDAUs), k.Calls, k.Category, profile.Shorten(k.Name, 70))
	}
	for _, n := range s.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func pctOf(v, total float64) float64 {
	if total <= 0 {
		return 0
	}
	return 100 * v / total
}

// journalPlateau is the concurrency of the plateau of the journal's latest
// sweep for the campaign's model, TP and launch; 0 when there is none.
func journalPlateau(camp *campaign.Campaign) int {
	rr, err := report.ReadJournalFile(camp.JournalPath())
	if err != nil {
		return 0
	}
	return campaignrun.JournalPlateau(rr.Events, camp.RunIdentity())
}
