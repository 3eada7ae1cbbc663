package nccl_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/remote/local"
)

// gpuTorchrun skips the test unless torchrun is on the PATH and python3
// imports torch and sees a CUDA GPU.
func gpuTorchrun(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("torchrun"); err != nil {
		t.Skip("no torchrun here")
	}
	pyruntest.CUDAPython(t)
}

// TestRunOnOneGPU runs nccl.py under torchrun on this machine's first GPU,
// one process (Kimi-K2.5's TP8 step sizes, as the nproc1 fixture): each
// burst and all-to-all size comes back timed, without graph figures (one
// rank captures nothing worth timing) and without errors. Then with the
// capture paths forced on one rank (PROFDECK_NCCL_GRAPH_ONE_RANK=1): the
// captured burst is timed at every M and the burst between GEMMs runs
// without an error. Each figure left out is said: on one rank unforced, the
// graph and the burst between GEMMs once; forced, a burst between GEMMs not
// slower than the GEMMs alone at its M.
func TestRunOnOneGPU(t *testing.T) {
	gpuTorchrun(t)
	for _, forced := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cfg := nccl.Complete(nccl.Config{Host: local.New(), NProc: 1, Plan: pyruntest.KimiPlan(t, 1, 64), Tokens: []int{1, 16},
			Repeats: 3, Iters: 5, WorkDir: t.TempDir(), Force: true})
		if forced {
			cfg.Env = map[string]string{"PROFDECK_NCCL_GRAPH_ONE_RANK": "1"}
		}
		r, err := runResult(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatalf("graph forced %v: %v", forced, err)
		}
		if r.Env == nil || r.Env.NProc != 1 || r.Env.GPU == "" || len(r.Errors) != 0 {
			t.Fatalf("graph forced %v: env %+v, errors %+v", forced, r.Env, r.Errors)
		}
		if len(r.Bursts) != 2 || len(r.AllToAll) != 2 {
			t.Fatalf("graph forced %v: bursts %+v, all-to-all %+v", forced, r.Bursts, r.AllToAll)
		}
		warned := strings.Join(r.Warnings, "\n")
		t.Logf("graph forced %v: warnings %q", forced, r.Warnings)
		if !forced && (len(r.Warnings) != 1 || !strings.Contains(warned, "not captured on one rank")) {
			t.Errorf("one rank: warnings %q, want the one-rank capture said once", r.Warnings)
		}
		for _, b := range r.Bursts {
			t.Logf("graph forced %v: %+v", forced, b)
			if forced && b.InStepMs <= 0 && !strings.Contains(warned, fmt.Sprintf("at M=%d was not slower", b.M)) {
				t.Errorf("burst at M=%d: no figure between GEMMs and no warning saying why: %q", b.M, r.Warnings)
			}
			if b.Count != cfg.Plan.AllReduce.PerStep || b.Bytes != int64(b.M*cfg.Plan.Hidden*2) || b.TotalMs <= 0 || b.PerOpUs <= 0 {
				t.Errorf("graph forced %v: burst %+v", forced, b)
			}
			if forced != (b.GraphMs > 0) {
				t.Errorf("graph forced %v: graph %.4f ms", forced, b.GraphMs)
			}
		}
		for _, a := range r.AllToAll {
			if a.Us <= 0 || a.NProc != 1 {
				t.Errorf("all-to-all %+v", a)
			}
		}
	}
}
