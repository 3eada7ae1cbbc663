package sim

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// A TP1 step has no collectives: no all-reduce in the model, no
// communication kernel in the profile, and a one-rank trace.
func TestStepModelTP1NoCommunication(t *testing.T) {
	m := NewStepModel("kimi-k2.5", 1, 1)
	for _, b := range []int{1, 8, 128} {
		if ar := m.Parts(b).AllReduce; ar != 0 {
			t.Errorf("TP1 at M=%d: all-reduce %.1f µs, want 0", b, ar)
		}
	}
	p := newSimProfile(m, 40, 40, 0, time.Second, 1)
	if tab := p.table(); strings.Contains(tab, "nccl") || strings.Contains(tab, "cross_device") {
		t.Errorf("a TP1 profile holds communication kernels:\n%s", tab)
	}
	if tr := string(gunzip(t, p.trace(0))); !strings.Contains(tr, `"world_size":1`) || strings.Contains(tr, "ncclDevKernel") {
		t.Error("a TP1 trace says another world size or holds NCCL kernels")
	}
	if m8 := NewStepModel("kimi-k2.5", 8, 1); m8.Parts(1).AllReduce <= 0 {
		t.Error("TP8 has no all-reduce")
	}
}

// The profile's kernels per step are the step model's parts, group by
// group, at the capture's batch; its steps are the model's step time.
func TestProfileIsTheStepModel(t *testing.T) {
	m := NewStepModel("kimi-k2.5", 8, 1)
	for _, b := range []int64{1, 64, 128} {
		p := newSimProfile(m, 50, 50*b, 0, time.Second, 3)
		got := map[string]float64{}
		for i, k := range simKernels {
			got[k.group] += p.callUs(i) * float64(k.calls)
		}
		want := m.Parts(int(b))
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"all-reduce", got[groupComm], want.AllReduce},
			{"GEMM", got[groupGEMM], want.GEMM},
			{"MoE", got[groupMoE] + got[groupMoEGEMM], want.MoE},
			{"attention", got[groupAttention], want.Attention},
			{"other", got[groupOther], want.Other},
		} {
			if math.Abs(c.got-c.want) > 0.03*c.want {
				t.Errorf("M=%d %s: profile %.0f µs per step, model %.0f", b, c.name, c.got, c.want)
			}
		}
		if d := m.StepTime(int(b), 0); math.Abs(p.stepUs-float64(d.Microseconds())) > 1 {
			t.Errorf("M=%d: profile step %.0f µs, scheduler's %v", b, p.stepUs, d)
		}
	}
	// Prompt tokens in the window add the model's prefill time per token.
	p0 := newSimProfile(m, 50, 50*8, 0, time.Second, 3)
	p1 := newSimProfile(m, 50, 50*8, 50*100, time.Second, 3)
	if d := p1.stepUs - p0.stepUs; math.Abs(d-m.PrefillMicros(100)) > 1 {
		t.Errorf("100 prompt tokens per step add %.0f µs, want %.0f", d, m.PrefillMicros(100))
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
