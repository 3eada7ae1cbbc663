package gputel_test

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gputel"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// startSim starts a simulated deployment serving at once.
func startSim(t *testing.T, o sim.Options) *sim.Deployment {
	t.Helper()
	o.AutoStart, o.LoadTime = true, time.Second
	o.Emulator = vllmemu.Config{ServeBeforeReady: true}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := sim.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); cancel() })
	return d
}

// collect gathers a run's events.
type collect struct {
	mu  sync.Mutex
	evs []phases.Event
}

func (c *collect) emitter(ctx context.Context) *phases.Emitter {
	ch := make(chan phases.Event)
	go func() {
		for {
			select {
			case ev := <-ch:
				c.mu.Lock()
				c.evs = append(c.evs, ev)
				c.mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	return &phases.Emitter{Out: ch}
}

// kinds is the events of kind, once the last one sent was taken in.
func (c *collect) kinds(kind string) []phases.Event {
	time.Sleep(50 * time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []phases.Event
	for _, ev := range c.evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// A sweep on the simulated 8-GPU host: the sampler says what it reads,
// emits a round a second with all 8 GPUs, and each level gets power,
// utilisation, clocks, energy per token and link traffic; the busier level
// spends fewer joules per token.
func TestSweepOnSimulatedHost(t *testing.T) {
	d := startSim(t, sim.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var c collect
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	sw, err := macro.NewSweep(macro.Config{API: macro.APICompletions, Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent,
		URL: "http://" + d.Options().ServerAddr, Dial: d.DialContext, Host: d,
		Concurrency: []int{1, 8}, Duration: 3 * time.Second, InputLen: 32, OutputLen: 64, NoPreflight: true,
		GPU: gputel.New(d, gputel.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Run(ctx, c.emitter(cctx))
	if err != nil {
		t.Fatal(err)
	}
	if res.GPU == nil || res.GPU.Source != gputel.SourceDmon || res.GPU.GPUs != 8 || !res.GPU.NVLink || res.GPU.NVLinkPeakGBs < 478 {
		t.Fatalf("source = %+v", res.GPU)
	}
	if !strings.Contains(res.GPU.Command, "--gpm-metrics 60,61") {
		t.Errorf("command %q does not read NVLink", res.GPU.Command)
	}
	if !hasWarning(res.Warnings, "energy is mean sampled power") {
		t.Errorf("the energy estimate is not said: %q", res.Warnings)
	}
	rounds := c.kinds(phases.KindMacroGPU)
	if len(rounds) < 4 {
		t.Fatalf("%d rounds in a %d-level sweep", len(rounds), len(res.Levels))
	}
	for _, ev := range rounds {
		if s := ev.Data.(phases.GPUTelSample); len(s.GPUs) != 8 {
			t.Fatalf("a round has %d GPUs", len(s.GPUs))
		}
	}
	var jpt []float64
	for _, l := range res.Levels {
		g := l.GPU
		if g == nil || g.Samples < 2 || g.GPUs != 8 {
			t.Fatalf("C=%d: gpu = %+v", l.Concurrency, g)
		}
		if g.MeanPowerW < 8*200 || g.PeakPowerW < g.MeanPowerW || g.MeanUtilPct < 30 || g.PeakSMClockMHz != 1980 {
			t.Errorf("C=%d: power %.0f/%.0f W, util %.0f%%, clock %.0f", l.Concurrency, g.MeanPowerW, g.PeakPowerW, g.MeanUtilPct, g.MeanSMClockMHz)
		}
		if g.NVLinkGBs == nil || *g.NVLinkGBs <= 0 || g.PCIeGBs == nil || *g.PCIeGBs <= 0 || g.Throttle != "" {
			t.Errorf("C=%d: links %v %v, throttle %q", l.Concurrency, g.NVLinkGBs, g.PCIeGBs, g.Throttle)
		}
		want := g.MeanPowerW * l.DurationS / (l.OutputThroughput * l.DurationS)
		if g.JPerOutputToken <= 0 || abs(g.JPerOutputToken-want) > 1e-9*want {
			t.Errorf("C=%d: %.4f J/token, want mean power / throughput = %.4f", l.Concurrency, g.JPerOutputToken, want)
		}
		jpt = append(jpt, g.JPerOutputToken)
	}
	if jpt[1] >= jpt[0] {
		t.Errorf("J/token %.3f at C=1, %.3f at C=8: want fewer joules per token when busier", jpt[0], jpt[1])
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func hasWarning(ws []string, sub string) bool {
	for _, w := range ws {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

// runFor runs a sampler for d and returns it with its events.
func runFor(t *testing.T, s *gputel.Sampler, d time.Duration) *collect {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var c collect
	if err := s.Run(ctx, c.emitter(ctx)); err != nil {
		t.Fatal(err)
	}
	return &c
}

// One PCIe-only GPU says once that there is no NVLink, and runs dmon
// without GPM metrics.
func TestNoNVLinkSaidOnce(t *testing.T) {
	d := startSim(t, sim.Options{GPUs: 1, NoNVLink: true})
	s := gputel.New(d, gputel.Options{})
	c := runFor(t, s, 2500*time.Millisecond)
	srcs := c.kinds(phases.KindMacroGPUSource)
	if len(srcs) != 1 {
		t.Fatalf("%d source events", len(srcs))
	}
	src := srcs[0].Data.(phases.GPUTelSource)
	if src.NVLink || strings.Contains(src.Command, "gpm") || src.GPUs != 1 || !hasWarning(src.Notes, "no NVLink on sim") {
		t.Fatalf("source = %+v", src)
	}
	if n := len(c.kinds(phases.KindMacroGPU)); n < 2 {
		t.Fatalf("%d rounds in 2.5 s", n)
	}
	now := time.Now()
	lv := s.Level(now.Add(-3*time.Second), now, 100)
	if lv == nil || lv.NVLinkGBs != nil || lv.PCIeGBs == nil || lv.Samples < 2 {
		t.Fatalf("level = %+v", lv)
	}
}

// NVLink on a GPU whose dmon refuses GPM metrics: said once, not measured.
func TestNVLinkWithoutCounters(t *testing.T) {
	d := startSim(t, sim.Options{GPUs: 2, NoGPM: true})
	s := gputel.New(d, gputel.Options{})
	c := runFor(t, s, 1500*time.Millisecond)
	src := s.Source()
	if src.NVLink || !hasWarning(src.Notes, "NVLink traffic is not measured") || src.NVLinkPeakGBs < 478 {
		t.Fatalf("source = %+v", src)
	}
	if len(c.kinds(phases.KindMacroGPU)) == 0 {
		t.Fatal("no round")
	}
}

// A power cap shows as power throttling with lower clocks.
func TestPowerCapThrottles(t *testing.T) {
	d := startSim(t, sim.Options{GPUs: 2, PowerCapW: 300})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sw, err := macro.NewSweep(macro.Config{API: macro.APICompletions, Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent,
		URL: "http://" + d.Options().ServerAddr, Dial: d.DialContext,
		Concurrency: []int{4}, Duration: 2500 * time.Millisecond, InputLen: 32, OutputLen: 64, NoPreflight: true,
		GPU: gputel.New(d, gputel.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := res.Levels[0].GPU
	if g == nil || g.Throttle != "power" || g.PeakPowerW > 2*300 || g.MeanSMClockMHz >= 1980 || g.PowerThrottlePct < 5 {
		t.Fatalf("gpu = %+v", g)
	}
}

// A host without nvidia-smi says so once and the sampler ends.
func TestNoNvidiaSMI(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has nvidia-smi")
	}
	s := gputel.New(local.New(), gputel.Options{})
	c := runFor(t, s, 10*time.Second)
	src := s.Source()
	if src.Source != "" || !hasWarning(src.Notes, "nvidia-smi is not there") || len(c.kinds(phases.KindMacroGPUSource)) != 1 {
		t.Fatalf("source = %+v", src)
	}
	if s.Level(time.Now().Add(-time.Second), time.Now(), 10) != nil {
		t.Fatal("a level summary without a source")
	}
}
