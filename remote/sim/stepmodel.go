package sim

import (
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases/model"
)

// StepModel is the simulated deployment's one model of an engine step: a
// function of the decode batch (and the prompt tokens prefilled in the
// same step) over the served model's plan at the deployment's TP and node
// count. The emulator's scheduler takes its step times from it, the
// simulated micro and NCCL scripts their timings (gemmMicros and
// allReduceMicros, the same functions it sums) and the simulated torch
// profiler its kernels, so the demo's budget parts, from the isolated
// benchmarks and from the profile, add up to the sweep's TPOT the way a
// real engine's do.
type StepModel struct {
	cfg    model.Config
	ok     bool // cfg is a known model; else the fixed Kimi-K2.5 TP8 kernel mix
	tp     int
	nodes  int
	mu     sync.Mutex
	byM    map[int]StepParts
	perTok float64 // µs of device time per prompt token prefilled
}

// StepParts is one decode step of M tokens, in microseconds.
type StepParts struct {
	AllReduce float64 // the step's all-reduces, replayed from a CUDA graph
	GEMM      float64 // the GEMMs of weights served in BF16, as micro sums them
	MoE       float64 // the GEMMs of quantized weights as served, and the routing kernels
	Attention float64
	Other     float64 // norms, activations, sampling, copies
	HostGap   float64 // launches and the host's work between steps
}

// Device is the GPU time of the step.
func (p StepParts) Device() float64 { return p.AllReduce + p.GEMM + p.MoE + p.Attention + p.Other }

// Total is the step's wall time.
func (p StepParts) Total() float64 { return p.Device() + p.HostGap }

// The host's share of a step: a fixed launch-and-schedule cost plus a little
// per running request (its sampling metadata and output processing).
const (
	hostGapUs       = 450.0
	hostGapPerSeqUs = 2.0
)

// NewStepModel is the step model of the preset served at tp over nodes
// (nodes ≤ 1: one node). An unknown preset gets Kimi-K2.5's shapes.
func NewStepModel(preset string, tp, nodes int) *StepModel {
	cfg, ok := model.Preset(preset)
	if !ok {
		cfg, ok = model.Preset("kimi-k2.5")
	}
	m := &StepModel{cfg: cfg, ok: ok, tp: max(tp, 1), nodes: max(nodes, 1), byM: map[int]StepParts{}}
	m.perTok = m.prefillPerToken()
	return m
}

// TP is the model's tensor-parallel size.
func (m *StepModel) TP() int { return m.tp }

// Parts is one decode step of batch tokens.
func (m *StepModel) Parts(batch int) StepParts {
	batch = max(batch, 1)
	m.mu.Lock()
	p, ok := m.byM[batch]
	m.mu.Unlock()
	if ok {
		return p
	}
	p = m.parts(batch)
	m.mu.Lock()
	m.byM[batch] = p
	m.mu.Unlock()
	return p
}

// PrefillMicros is the device time of prefilling tokens prompt tokens inside
// a step.
func (m *StepModel) PrefillMicros(tokens int) float64 { return float64(max(tokens, 0)) * m.perTok }

// StepTime is one engine step with batch requests decoding and prefill
// prompt tokens prefilled in it: what the emulator's scheduler waits.
func (m *StepModel) StepTime(batch, prefill int) time.Duration {
	us := m.Parts(batch).Total() + m.PrefillMicros(prefill)
	return time.Duration(us * float64(time.Microsecond))
}

func (m *StepModel) plan(batch int) (model.Plan, bool) {
	if !m.ok {
		return model.Plan{}, false
	}
	p, err := model.Build(m.cfg, model.Options{TP: m.tp, Batch: []int{batch}})
	return p, err == nil
}

func (m *StepModel) parts(batch int) StepParts {
	var p StepParts
	table := tableGroups(batch)
	p.Attention, p.Other = table[groupAttention], table[groupOther]
	p.MoE = table[groupMoE]
	p.HostGap = hostGapUs + hostGapPerSeqUs*float64(batch-1)
	plan, ok := m.plan(batch)
	if !ok {
		p.GEMM, p.MoE = table[groupGEMM], p.MoE+table[groupMoEGEMM]
		if m.tp > 1 {
			p.AllReduce = table[groupComm]
		}
		return p
	}
	for _, g := range plan.At(batch) {
		if g.Served != "" {
			p.MoE += servedMicros(g) * float64(g.PerStep)
			continue
		}
		p.GEMM += gemmMicros(g) * float64(g.PerStep)
	}
	p.AllReduce = m.allReduce(plan, batch)
	return p
}

// tableGroups is the fixed kernel mix's time per step by group at batch.
func tableGroups(batch int) map[string]float64 {
	out := map[string]float64{}
	for _, k := range simKernels {
		out[k.group] += float64(k.calls) * k.us * (1 + k.slope*float64(batch-1))
	}
	return out
}

// groupTargets is the time per step each kernel group takes in the step
// model at batch (plus prefill µs of prompt tokens, spread over the GEMMs).
func (m *StepModel) groupTargets(batch int, prefill float64) map[string]float64 {
	p := m.Parts(batch)
	routing := tableGroups(batch)[groupMoE]
	t := map[string]float64{
		groupComm: p.AllReduce, groupGEMM: p.GEMM, groupMoEGEMM: p.MoE - routing, groupMoE: routing,
		groupAttention: p.Attention, groupOther: p.Other,
	}
	if g := t[groupGEMM] + t[groupMoEGEMM]; prefill > 0 && g > 0 {
		f := 1 + prefill/g
		t[groupGEMM] *= f
		t[groupMoEGEMM] *= f
	}
	return t
}

// allReduce is the step's all-reduces as the NCCL script times them.
func (m *StepModel) allReduce(plan model.Plan, batch int) float64 {
	if m.tp <= 1 {
		return 0
	}
	count := plan.AllReduce.PerStep
	bytes := int64(batch) * int64(plan.Hidden) * 2
	op := allReduceMicros(m.tp, bytes)*graphFactor + interNodeMicros(m.nodes, 2*bytes)
	return op * float64(count)
}

// servedMicros is one call of g in the dtype its weights are served in:
// the weights' bytes at that width, the activations in BF16.
func servedMicros(g model.GEMM) float64 {
	bits := servedBits(g.Served)
	c := float64(g.Count())
	w := c * float64(g.N) * float64(g.K) * float64(bits) / 8
	act := 2 * c * (float64(g.M)*float64(g.K) + float64(g.M)*float64(g.N))
	bw := singleGBs
	if g.Count() > 1 {
		bw = batchedGBs
	}
	mem := (w + act) / (bw * 1e3)
	comp := g.FLOPs() / (sustainedTFLOPs * 1e6)
	return gemmFixedUs + max(mem, comp)
}

// servedBits is the weight width of a served dtype (int4, w4a16, fp8, …).
func servedBits(dtype string) int {
	d := strings.ToLower(dtype)
	switch {
	case strings.Contains(d, "4"):
		return 4
	case strings.Contains(d, "8"):
		return 8
	}
	return 16
}

// prefillPerToken is the device time one prompt token adds to a step: its
// FLOPs through every GEMM of the step at the sustained rate (a prefill is
// compute-bound), plus what one more token adds to the other kernels.
func (m *StepModel) prefillPerToken() float64 {
	plan, ok := m.plan(1)
	if !ok {
		return 10
	}
	fl := 0.0
	for _, g := range plan.At(1) {
		fl += g.FLOPs() * float64(g.PerStep)
	}
	one := m.parts(1)
	two := m.parts(2)
	kernels := two.Other - one.Other
	return fl/(sustainedTFLOPs*1e6) + kernels
}

// stepModel is the deployment's step model: the preset at TP over the
// nodes.
func (o Options) stepModel() *StepModel {
	preset := o.Preset
	if preset == "" {
		preset = "kimi-k2.5"
	}
	tp := o.TP
	if tp <= 0 {
		tp = o.GPUs * max(o.Nodes, 1)
	}
	return NewStepModel(preset, tp, o.Nodes)
}
