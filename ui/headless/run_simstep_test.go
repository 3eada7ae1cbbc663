package headless

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
)

// A TP1 campaign on the simulated host is a one-GPU deployment: no
// communication anywhere, the NCCL step done with nothing to time, and
// the run exits 0.
func TestRunTP1OnSim(t *testing.T) {
	camp := strings.NewReplacer("tp: 8", "tp: 1", "--tensor-parallel-size 8", "--tensor-parallel-size 1").Replace(simCampaign)
	ctx, path := simRunSetup(t, "a whole campaign on the simulated host", camp, 3*time.Minute)
	o := runCmd(t, ctx, path)
	if o.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	if s := stepState(o.rep, "nccl"); s.State != phases.StepDone || !strings.Contains(s.Reason, "no collectives at TP1") {
		t.Errorf("nccl step: %s (%s), want done with no collectives at TP1", s.State, s.Reason)
	}
	if s := stepState(o.rep, "profile"); !strings.Contains(s.Reason, "C=1 0.0%") {
		t.Errorf("profile step: %s", s.Reason)
	}
	b := o.rep.Budget.Single
	if b.AllReduceMs != 0 || b.Engine == nil || b.Engine.CommMs != 0 {
		t.Errorf("C=1: all-reduce %.2f ms, engine %+v: want no communication", b.AllReduceMs, b.Engine)
	}
	if b.Whole == nil {
		t.Fatal("no whole split at C=1")
	}
	for _, p := range b.Whole.Parts {
		if p.Name == "all-reduce" && p.Ms != 0 {
			t.Errorf("whole split: all-reduce %.2f ms at TP1", p.Ms)
		}
	}
}

// The demo's campaign on the simulated host: its budget agrees with
// itself as a real engine's does. At C=1 and at the plateau the NCCL burst
// is within 15% of the engine's communication and micro's GEMMs (experts
// as served) within 1.5× of the engine's GEMM and MoE kernels, and the
// whole split's parts sum to the sweep's TPOT within 10% (what is not
// accounted for within 5% at every profiled level).
func TestRunSimBudgetAgrees(t *testing.T) {
	// The server's batch cap at 16 puts the plateau at C=16, so the levels,
	// GEMMs and profile windows stay small.
	camp := strings.NewReplacer("--port 8000", "--port 8000 --max-num-seqs 16",
		"concurrency: [1, 8]", "concurrency: [1, 8, 16, 32]", "duration: 1s", "duration: 3s",
		"input_len: 32", "input_len: 128", "output_len: 8", "output_len: 32", "  batch: [1, 8]\n", "  batch: [1, 8, 16]\n").Replace(simCampaign)
	ctx, path := simRunSetup(t, "a whole campaign on the simulated host", camp, 5*time.Minute)
	o := runCmd(t, ctx, path)
	if o.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	if o.rep.Budget.Plateau == nil {
		t.Fatalf("no plateau in the budget\n%s", o.stderr)
	}
	for _, b := range []report.BudgetSplit{o.rep.Budget.Single, *o.rep.Budget.Plateau} {
		checkBudgetAgrees(t, b)
	}
	// The simulator has one model of its step: at every profiled level
	// what the budget leaves unaccounted is within 5% of TPOT.
	for _, b := range o.rep.Budget.Levels {
		if b.Whole == nil || math.Abs(b.Whole.NotAccountedMs) > 0.05*b.Whole.TPOTms {
			t.Errorf("C=%d: not accounted for %v of TPOT %v", b.Concurrency, b.Whole, b.MeanTPOTms)
		}
	}
}

func checkBudgetAgrees(t *testing.T, b report.BudgetSplit) {
	t.Helper()
	if b.Engine == nil || b.Whole == nil {
		t.Fatalf("C=%d: engine %v, whole %v", b.Concurrency, b.Engine, b.Whole)
	}
	near := func(what string, got, want, tol float64) {
		if math.Abs(got-want) > tol*want {
			t.Errorf("C=%d %s: %.2f ms against %.2f ms (more than %.0f%% apart)", b.Concurrency, what, got, want, 100*tol)
		}
	}
	near("all-reduce (NCCL) against the profile's communication", b.AllReduceMs, b.Engine.CommMs, 0.15)
	near("GEMM (micro, experts as served) against the profile's GEMM and MoE kernels", b.GEMMms, b.Engine.GEMMms+b.Engine.MoEms, 0.5)
	if b.UpperBoundMs != 0 {
		t.Errorf("C=%d: micro timed %v in BF16 (%.2f ms, an upper bound): the simulated engine's kernels time them as served", b.Concurrency, b.UpperBound, b.UpperBoundMs)
	}
	near("the whole split's parts against the mean TPOT", b.Whole.SumMs, b.Whole.TPOTms, 0.10)
	near("the whole split's parts against the median TPOT", b.Whole.SumMs, b.TPOTms, 0.10)
}
