package micro

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/remote/local"
)

// TestRunOnGPU runs the whole micro phase on this machine's GPU, as
// `profdeck micro --host local` does, calibration included: Kimi-K2.5's
// TP8 step at M=1 and M=8 (no vLLM here: every GEMM in BF16). Each GEMM of
// the plan comes back once, each M has its whole step timed in a CUDA
// graph, the 8192³ calibration is there, and the progress ends with all
// of its steps done, without an error.
func TestRunOnGPU(t *testing.T) {
	py := pyruntest.CUDAPython(t)
	plan := pyruntest.KimiPlan(t, 1, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ch := make(chan phases.Event, 1024)
	r, collected := &Result{}, make(chan struct{})
	go func() {
		defer close(collected)
		for ev := range ch {
			r.Add(ev)
		}
	}()
	var last struct {
		Type        string
		Done, Total int
	}
	onRaw := func(line string) {
		var l struct {
			Type        string
			Done, Total int
		}
		if json.Unmarshal([]byte(line), &l) == nil && (l.Type == "progress" || l.Type == "done") {
			last = l
		}
	}
	err := Run(ctx, Config{Host: local.New(), Python: py, Plan: plan, WorkDir: t.TempDir(), Force: true,
		WarmupMs: 2, RepMs: 5, OnRaw: onRaw}, &phases.Emitter{Out: ch})
	close(ch)
	<-collected
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) != 0 || r.Env == nil || r.Env.GPU == "" || r.Env.CopyGBs <= 0 {
		t.Fatalf("errors %+v, env %+v", r.Errors, r.Env)
	}
	if r.Calib == nil || r.Calib.TFLOPs <= 0 {
		t.Errorf("calibration %+v", r.Calib)
	}
	if len(r.GEMMs) != len(plan.GEMMs) {
		t.Errorf("%d GEMMs timed, the plan has %d", len(r.GEMMs), len(plan.GEMMs))
	}
	for _, g := range r.GEMMs {
		if g.Us <= 0 || g.AsServed {
			t.Errorf("GEMM %+v", g)
		}
	}
	if len(r.Steps) != 2 {
		t.Fatalf("steps %+v", r.Steps)
	}
	for _, s := range r.Steps {
		if sum := r.StepSum(s.M); !s.Graph || s.BackToBackUs <= 0 || s.SumUs <= 0 || sum < s.SumUs*0.999 || sum > s.SumUs*1.001 {
			t.Errorf("step %+v (sum of its GEMM lines %.3f µs)", s, sum)
		}
	}
	if last.Type != "done" || last.Done != last.Total || last.Total != len(plan.GEMMs)+2+1 {
		t.Errorf("last progress %+v; want done %d of %d", last, len(plan.GEMMs)+3, len(plan.GEMMs)+3)
	}
}
