package micro_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/sim"
)

const fixture = "testdata/micro-kimi-k2.5-tp8.lines.jsonl"

// readLines turns script output into a Result, as the engine does.
func readLines(t *testing.T, data []byte) *micro.Result {
	t.Helper()
	r := &micro.Result{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l, ok := pyrun.ParseLine(sc.Text())
		if !ok {
			continue
		}
		if kind, d, ok := micro.LineEvent(l); ok {
			r.Add(phases.New(time.Now(), kind, d))
		}
	}
	return r
}

// TestParseRealRun reads the lines of a real H200 run.
func TestParseRealRun(t *testing.T) {
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	r := readLines(t, b)
	if r.Env == nil || r.Env.GPU != "NVIDIA H200" || r.Env.PeakGBs != 4800 || r.Env.CopyGBs < 3000 {
		t.Fatalf("env %+v", r.Env)
	}
	plan := pyruntest.KimiPlan(t, 1, 8, 64, 128)
	if len(r.GEMMs) != len(plan.GEMMs) || len(r.Steps) != 4 || len(r.Errors) != 0 {
		t.Fatalf("%d GEMMs (plan %d), %d steps, errors %v", len(r.GEMMs), len(plan.GEMMs), len(r.Steps), r.Errors)
	}
	// The script's own per-step sums agree with the sums of its GEMM lines.
	for _, s := range r.Steps {
		if got := r.StepSum(s.M); math.Abs(got-s.SumUs) > 1e-6*s.SumUs {
			t.Errorf("M=%d: Σ step_us %.3f, script said %.3f", s.M, got, s.SumUs)
		}
		if !s.Graph || s.BackToBackUs <= 0 {
			t.Errorf("M=%d back-to-back %+v", s.M, s)
		}
	}
	// The measured rate of the 8192³ GEMM is within 5% of triton's do_bench.
	c := r.Calib
	if c == nil || c.DoBenchTFLOPs == 0 || math.Abs(c.TFLOPs/c.DoBenchTFLOPs-1) > 0.05 {
		t.Errorf("calibration %+v", c)
	}
	// Largest contributors first.
	rows := r.Rows(128, micro.ByStepTime)
	for i := 1; i < len(rows); i++ {
		if rows[i].StepUs > rows[i-1].StepUs {
			t.Fatalf("rows not sorted by step time at %d", i)
		}
	}
	if rows[0].Name != "experts.w13" {
		t.Errorf("M=128 top GEMM %s", rows[0].Name)
	}
	var out bytes.Buffer
	r.WriteTables(&out)
	for _, want := range []string{"M=128", "experts.w13*", "308·(3×512×7168)", "back-to-back ms", "triton do_bench", "upper bound"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tables lack %q", want)
		}
	}
}

// fakePython writes a stand-in for python that prints the first n lines of
// the real run and dies like a CUDA failure.
func fakePython(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	head := filepath.Join(dir, "head.jsonl")
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(head, []byte(strings.Join(lines[:n], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := filepath.Join(dir, "python")
	script := "#!/bin/sh\ncat " + remote.Quote(head) + "\necho 'Traceback (most recent call last):' >&2\n" +
		"echo 'torch.AcceleratorError: CUDA error: an illegal memory access was encountered' >&2\nexit 1\n"
	if err := os.WriteFile(sh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return sh
}

func collect(ctx context.Context, run func(em *phases.Emitter) error) (*micro.Result, []phases.Event, error) {
	ch := make(chan phases.Event, 1024)
	done := make(chan struct{})
	r := &micro.Result{}
	var evs []phases.Event
	go func() {
		defer close(done)
		for ev := range ch {
			r.Add(ev)
			evs = append(evs, ev)
		}
	}()
	err := run(&phases.Emitter{Out: ch})
	close(ch)
	<-done
	return r, evs, err
}

// TestScriptDiesHalfway: the results before the failure are kept, and the
// failure is both returned and emitted with the script's last stderr lines.
func TestScriptDiesHalfway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	py := fakePython(t, 20)
	r, evs, err := collect(ctx, func(em *phases.Emitter) error {
		return micro.Run(ctx, micro.Complete(micro.Config{Host: local.New(), Python: py, Plan: pyruntest.KimiPlan(t, 1), WorkDir: t.TempDir(), Force: true}), em)
	})
	var ee *remote.ExitError
	if !errors.As(err, &ee) || ee.Status != 1 || !strings.Contains(ee.Stderr, "illegal memory access") {
		t.Fatalf("error %v", err)
	}
	if len(r.GEMMs) == 0 || r.Env == nil || r.Calib == nil {
		t.Fatalf("partial results lost: %d GEMMs, env %v", len(r.GEMMs), r.Env)
	}
	if len(r.Errors) != 1 || !r.Errors[0].Fatal || !strings.Contains(r.Errors[0].Err, "illegal memory access") {
		t.Errorf("errors %+v", r.Errors)
	}
	// The script's error is the last result; the phase's failed finish
	// follows it.
	if n := len(evs); n < 2 || evs[n-2].Kind != phases.KindMicroError || evs[n-1].Kind != phases.KindSessionPhaseFinished {
		t.Errorf("last events %s", evs[max(0, n-2):])
	}
	if fin := evs[len(evs)-1].Data.(phases.PhaseFinished); fin.Outcome != phases.OutcomeFailed || fin.Err == "" {
		t.Errorf("finish %+v", fin)
	}
}

func TestRunOnSim(t *testing.T) {
	ctx, d := pyruntest.StartSim(t, sim.Options{})
	plan := pyruntest.KimiPlan(t, 1, 128)
	r, _, err := collect(ctx, func(em *phases.Emitter) error {
		return micro.Run(ctx, micro.Complete(micro.Config{Host: d, Python: "docker exec -i vllm python3", Plan: plan}), em)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GEMMs) != len(plan.GEMMs) || len(r.Steps) != 2 || r.Calib == nil || r.Env == nil {
		t.Fatalf("%d GEMMs of %d, %d steps, calib %v", len(r.GEMMs), len(plan.GEMMs), len(r.Steps), r.Calib)
	}
	// The simulated step at M=1 is in the range the real H200 gave (5–8 ms).
	if s := r.StepSum(1); s < 4000 || s > 10000 {
		t.Errorf("simulated M=1 step %.0f µs", s)
	}
}

func TestCancelOnSim(t *testing.T) {
	ctx, d := pyruntest.StartSim(t, sim.Options{})
	run, stop := context.WithCancel(ctx)
	ch := make(chan phases.Event, 1024)
	errc := make(chan error, 1)
	go func() {
		errc <- micro.Run(run, micro.Complete(micro.Config{Host: d, Plan: pyruntest.KimiPlan(t, 1, 8, 64)}), &phases.Emitter{Out: ch})
	}()
	got := 0
	for got < 3 {
		select {
		case ev := <-ch:
			if ev.Kind == phases.KindMicroGEMM {
				got++
			}
		case err := <-errc:
			t.Fatalf("Run ended before any result: %v", err)
		case <-ctx.Done():
			t.Fatal("no results")
		}
	}
	stop()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestBusyGPUsOnSim(t *testing.T) {
	ctx, d := pyruntest.StartSim(t, sim.Options{AutoStart: true, LoadTime: 2 * time.Second})
	var busy *pyrun.BusyError
	for !errors.As(pyrun.CheckGPUs(ctx, d), &busy) {
		if ctx.Err() != nil {
			t.Fatal("the simulated server never showed on nvidia-smi")
		}
		time.Sleep(100 * time.Millisecond)
	}
	err := micro.Run(ctx, micro.Complete(micro.Config{Host: d, Plan: pyruntest.KimiPlan(t, 1)}), nil)
	if !errors.As(err, &busy) || len(busy.Procs) != 8 || !strings.Contains(err.Error(), "VLLM::Worker_TP0") {
		t.Fatalf("error %v", err)
	}
}

func TestCommandQuotesPaths(t *testing.T) {
	c := micro.Command(micro.Complete(micro.Config{Python: "docker exec -i vllm python3", RepMs: 20}), "/tmp/a b/s.py", "/tmp/p.json")
	want := `docker exec -i vllm python3 -c "$(cat '/tmp/a b/s.py')" --plan "$(cat /tmp/p.json)" --rep-ms 20`
	if c != want {
		t.Errorf("\n got %s\nwant %s", c, want)
	}
}

// BenchmarkParseRealRun: parsing a whole real run's output (63 lines) into
// a Result, as the pane does while it streams in.
func BenchmarkParseRealRun(b *testing.B) {
	data, err := os.ReadFile(fixture)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := &micro.Result{}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if l, ok := pyrun.ParseLine(sc.Text()); ok {
				if kind, d, ok := micro.LineEvent(l); ok {
					r.Add(phases.New(time.Time{}, kind, d))
				}
			}
		}
	}
}
