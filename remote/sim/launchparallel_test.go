package sim

import (
	"math"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// A launch's parallel layout rescales the step model's step, worked by
// hand from its parts at batch 8 on Kimi-K2.5 at TP 8: TP 4 doubles the
// device work other than communication and takes TP 4's all-reduces; DP 2
// runs 16 requests as two replicas of 8 (the same step as 8 on one) with
// twice the seats; expert parallelism keeps ¾ of the communication.
// At batch 8 the step is 464 µs of host gap + 16121.2 µs of device time,
// 5543.0 of it all-reduce; at TP 4: 464 + (16121.2 − 5543.0) × 8/4 +
// 2958.8 = 24579.2 µs against TP 8's 16585.2 µs.
func TestParallelLaunchScalesTheStep(t *testing.T) {
	m := NewStepModel("kimi-k2.5", 8, 1)
	p8, p8at4 := m.Parts(8), m.AtTP(4).Parts(8)
	t.Logf("TP8 batch 8: host %.1f µs, device %.1f µs of which all-reduce %.1f; all-reduce at TP4 %.1f µs", p8.HostGap, p8.Device(), p8.AllReduce, p8at4.AllReduce)
	if p8.AllReduce <= 0 || p8at4.AllReduce <= 0 || p8at4.AllReduce >= p8.AllReduce {
		t.Fatalf("all-reduce at TP8 %.1f µs, at TP4 %.1f µs: want both above 0, TP4's smaller (fewer ranks)", p8.AllReduce, p8at4.AllReduce)
	}
	us := func(cmd string, batch int) float64 { return ParallelOf(cmd, 8).StepMicros(m, batch, 0) }
	if got := us("vllm serve m --tensor-parallel-size 4", 8); math.Abs(got-24579.2) > 0.2 {
		t.Errorf("TP 4 at batch 8: %.1f µs, want 24579.2 (worked above)", got)
	}
	for _, tc := range []struct {
		cmd   string
		batch int
		want  float64
	}{
		{"vllm serve m --tensor-parallel-size 8", 8, p8.Total()},
		{"vllm serve m --tensor-parallel-size 4", 8, p8.HostGap + (p8.Device()-p8.AllReduce)*8/4 + p8at4.AllReduce},
		{"vllm serve m -tp 8 --data-parallel-size 2", 16, p8.Total()},
		{"vllm serve m -tp 8 --enable-expert-parallel", 8, p8.Total() - p8.AllReduce/4},
	} {
		if got := us(tc.cmd, tc.batch); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s at batch %d: %.2f µs, want %.2f", tc.cmd, tc.batch, got, tc.want)
		}
	}
	base := vllmemu.Config{StepFunc: m.StepTime, MaxNumSeqs: 0}
	c := launchEmulator("vllm serve m --tensor-parallel-size 8 --data-parallel-size 2 --max-num-seqs 64", base, m, true)
	if c.MaxNumSeqs != 128 || c.StepFunc(16, 0) != m.StepTime(8, 0) {
		t.Errorf("DP 2: %d seats (want 128), step at 16 %v (want %v)", c.MaxNumSeqs, c.StepFunc(16, 0), m.StepTime(8, 0))
	}
	if c := launchEmulator("vllm serve m --data-parallel-size 2", base, m, true); c.MaxNumSeqs != 2*vllmemu.DefaultMaxNumSeqs {
		t.Errorf("DP 2 with the default cap: %d seats", c.MaxNumSeqs)
	}
	// Step times given by hand are the deployment's own: a layout leaves them.
	given := vllmemu.Config{StepTime: 10 * time.Millisecond}
	if c := launchEmulator("vllm serve m --tensor-parallel-size 2", given, m, false); c.StepFunc != nil || c.StepTime != given.StepTime {
		t.Errorf("given step times changed: %+v", c)
	}
}

// The simulated deployment's server steps with its launch's layout.
func TestParallelLaunchOnTheDeployment(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 100 * time.Millisecond, TP: 8})
	if err := d.Run(ctx, "vllm serve m --tensor-parallel-size 8 --data-parallel-size 2 > /var/log/vllm/server.log 2>&1 &", nil, nil); err != nil {
		t.Fatal(err)
	}
	c := d.Emulator().Live()
	if c.MaxNumSeqs != 2*vllmemu.DefaultMaxNumSeqs || c.StepFunc == nil || c.StepFunc(32, 0) != d.step.StepTime(16, 0) {
		t.Errorf("DP 2: %d seats, step at 32 %v, want %d and %v", c.MaxNumSeqs, c.StepFunc(32, 0), 2*vllmemu.DefaultMaxNumSeqs, d.step.StepTime(16, 0))
	}
}
