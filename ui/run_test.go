package ui

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/report"
)

// On quit the cockpit waits for a running phase's end to be journalled, but
// not for the load (the server goes on loading) nor for a phase a resumed
// journal left open.
func TestWaitPhases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess := report.NewSession(ctx, nil)
	rec := func(kind string, data any) {
		t.Helper()
		if err := sess.Record(phases.New(time.Now(), kind, data)); err != nil {
			t.Fatal(err)
		}
	}
	rec(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Micro}) // left open before this session
	skip := len(sess.Events())
	rec(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Load})
	start := time.Now()
	waitPhases(sess, skip, 5*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("waited %v for the load or an earlier session's phase", d)
	}

	rec(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = sess.Record(phases.New(time.Now(), phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro}))
	}()
	start = time.Now()
	waitPhases(sess, skip, 5*time.Second)
	if d := time.Since(start); d < 250*time.Millisecond || d > 4*time.Second {
		t.Fatalf("waited %v, want until the sweep's end (about 300 ms)", d)
	}

	rec(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL}) // never ends
	start = time.Now()
	waitPhases(sess, skip, 200*time.Millisecond)
	if d := time.Since(start); d < 200*time.Millisecond || d > 3*time.Second {
		t.Fatalf("waited %v, want the 200 ms limit", d)
	}
}

// The demo's flags set its campaign's keys whatever their value (zero,
// empty included), or are refused naming the flag.
func TestDemoFlagsWin(t *testing.T) {
	parse := func(args ...string) (*campaign.Campaign, error) {
		fs, _, _, _ := newDemoFlags()
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return demoCampaign(fs, false)
	}
	if c, err := parse("--variants"); err != nil || len(c.VariantSpecs()) != 3 || c.VariantSpecs()[2].Name != "chunked" {
		t.Errorf("--variants: %v %+v", err, c)
	}
	c, err := parse("--load-time", "5s", "--stall-at", "0", "--fail", "", "--stall-after", "3s")
	if err != nil || c.Sim.LoadTime.Duration != 5*time.Second || c.Sim.StallAtGiB != 0 || c.Sim.Fail != "" || c.Load.StallAfter.Duration != 3*time.Second {
		t.Errorf("%v %+v %+v", err, c.Sim, c.Load)
	}
	c, err = parse("--concurrency", "1,8,128,256", "--profiler-flush", "0s")
	if err != nil || !slices.Equal(c.Macro.Concurrency, []int{1, 8, 128, 256}) || c.Sim.ProfilerFlush.Duration != 0 {
		t.Errorf("%v %v %+v", err, c.Macro.Concurrency, c.Sim)
	}
	if c, err := parse(); err != nil || c.Sim.LoadTime.Duration != 30*time.Second || c.Load.StallAfter.Duration != 10*time.Second ||
		!slices.Equal(c.Macro.Concurrency, campaign.DefaultConcurrency) || c.Sim.ProfilerFlush.Duration != campaign.DefaultSimProfilerFlush {
		t.Errorf("defaults: %v %+v", err, c)
	}
	for flag, want := range map[string]string{"--stall-after=0s": "--stall-after: must be more than 0", "--fail=gpu": "--fail: must be oom or nccl",
		"--stall-at=-1": "--stall-at: must be 0 or more", "--load-time=0s": "--load-time: must be more than 0",
		"--engine=foo": "--engine: must be vllm or sglang, got \"foo\"", "--engine=auto": "--engine: must be vllm or sglang",
		"--concurrency=1,x": "--concurrency: \"x\" is not a whole number", "--profiler-flush=-1s": "--profiler-flush: must not be negative"} {
		if _, err := parse(flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", flag, err, want)
		}
	}
}

// demo --trace writes the sample trace beside the notebook and makes the
// campaign's sweep its replay at 2×: one open-loop level on the trace's
// schedule, whose 24 requests it reads.
func TestDemoTraceReplays(t *testing.T) {
	dir := t.TempDir()
	c := campaign.Demo(dir)
	if err := demoTrace(c, dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg := c.SweepConfig("")
	if err := macro.LoadWorkload(&cfg); err != nil {
		t.Fatal(err)
	}
	tr := cfg.TraceSummary()
	if c.Macro.Dataset != macro.TraceMooncake || tr == nil || tr.Requests != 24 || tr.Speed != 2 || cfg.Rate <= 0 {
		t.Fatalf("dataset %q, trace %+v, rate %g", c.Macro.Dataset, tr, cfg.Rate)
	}
}

// The campaign run from the cockpit (the Notes pane's r) opens the
// campaign's load agents' hosts before anything starts, as profdeck run
// does: a host that cannot be opened is said, naming it.
func TestCampaignRunOpensTheLoadAgents(t *testing.T) {
	dir := t.TempDir()
	c := campaign.Demo(dir)
	// gen9 is a closed port on loopback.
	c.SSH.Config = filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(c.SSH.Config, []byte("Host gen9\n  HostName 127.0.0.1\n  Port 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Host, c.Macro.Loadgen.Hosts = "sim", campaign.LoadgenHosts{{Host: "sim", Procs: 1}, {Host: "gen9", Procs: 1}}
	run := campaignRunner(c, []remote.Host{local.New()}, &campaign.Opened{}, nil)
	_, err := run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "load agent host gen9") {
		t.Fatalf("err %v: want the agent host named", err)
	}
}
