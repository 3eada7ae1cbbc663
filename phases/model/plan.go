package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
)

// GEMM is one matrix product of a decode step on one GPU:
// y[M,N] = x[M,K] · W[N,K]ᵀ, or Batch such products side by side (a batched
// GEMM: the MLA absorbed projections, or the routed experts a batch touches,
// each with its own weight), run PerStep times per decode step.
type GEMM struct {
	Name   string `json:"name"`
	Step   int    `json:"step_m"` // the decode batch size this GEMM belongs to
	M      int    `json:"m"`
	N      int    `json:"n"`
	K      int    `json:"k"`
	Batch  int    `json:"batch,omitempty"` // >1: that many independent products in one batched GEMM
	Dtype  string `json:"dtype"`           // what the micro script times
	Served string `json:"served,omitempty"`
	// Group is the served weight's quantization group along K (int4's
	// group_size; 0 when unknown or not grouped).
	Group int `json:"served_group,omitempty"`
	// Module is the weight's module path in the checkpoint, for a GEMM
	// served quantized (e.g. model.layers.0.mlp.down_proj): the name the
	// engine's quantization config matches its targets and ignore list
	// against.
	Module  string `json:"module,omitempty"`
	PerStep int    `json:"per_step"`
}

// Count is how many products one call does (Batch, at least 1).
func (g GEMM) Count() int {
	if g.Batch > 1 {
		return g.Batch
	}
	return 1
}

// FLOPs of one call.
func (g GEMM) FLOPs() float64 {
	return 2 * float64(g.M) * float64(g.N) * float64(g.K) * float64(g.Count())
}

// Bytes one call moves at BF16: weights, input and output once each.
func (g GEMM) Bytes() float64 {
	return 2 * float64(g.Count()) * (float64(g.N)*float64(g.K) + float64(g.M)*float64(g.K) + float64(g.M)*float64(g.N))
}

// AllReduce is the step's tensor-parallel all-reduces: PerLayer per layer
// plus Embedding (vLLM's vocab-parallel embedding does one), each
// [M, hidden] BF16.
type AllReduce struct {
	PerStep       int `json:"per_step"`
	PerLayer      int `json:"per_layer"`
	Embedding     int `json:"embedding"`
	BytesPerToken int `json:"bytes_per_token"`
}

// AllToAll is the expert-parallel dispatch: each token goes to TopK experts,
// Hidden BF16 values each (no per-rank de-duplication).
type AllToAll struct {
	TopK          int `json:"topk"`
	Hidden        int `json:"hidden"`
	BytesPerToken int `json:"bytes_per_token"`
}

// Plan is one decode step on one GPU for each batch size M.
type Plan struct {
	Model     string    `json:"model"`
	TP        int       `json:"tp"`
	EP        bool      `json:"ep"`
	Batch     []int     `json:"batch"`
	Hidden    int       `json:"hidden"`
	Layers    int       `json:"layers"`
	GEMMs     []GEMM    `json:"gemms"`
	AllReduce AllReduce `json:"allreduce"`
	AllToAll  *AllToAll `json:"alltoall,omitempty"`
	// QuantConfig is the model's quantization_config as its config.json
	// has it (absent for BF16 models): the micro script builds the
	// engine's quantized linear layers from it.
	QuantConfig json.RawMessage `json:"quantization_config,omitempty"`
	Notes       []string        `json:"notes,omitempty"`
}

// At returns the plan's GEMMs for batch size m, in step order.
func (p Plan) At(m int) []GEMM {
	var out []GEMM
	for _, g := range p.GEMMs {
		if g.Step == m {
			out = append(out, g)
		}
	}
	return out
}

// Options choose the parallelism and batch sizes of a plan.
type Options struct {
	TP    int
	EP    bool  // vLLM --enable-expert-parallel: whole experts, E/TP per GPU
	Batch []int // the decode batch sizes M (at least one)
	// NoEmbeddingAllReduce leaves out the vocab-parallel embedding's
	// all-reduce (servers that replicate the embedding).
	NoEmbeddingAllReduce bool
}

// vocabPad is vLLM's padding of the vocabulary before it is split over ranks.
const vocabPad = 64

// Build plans one decode step of c under o.
func Build(c Config, o Options) (Plan, error) {
	if o.TP < 1 {
		return Plan{}, fmt.Errorf("tensor-parallel size %d: must be at least 1", o.TP)
	}
	batch := o.Batch
	if len(batch) == 0 {
		return Plan{}, errors.New("Batch: no batch sizes to plan (e.g. 1,8,64,128)")
	}
	for _, m := range batch {
		if m < 1 {
			return Plan{}, fmt.Errorf("batch size %d: must be at least 1", m)
		}
	}
	p := Plan{Model: c.Name, TP: o.TP, EP: o.EP && c.IsMoE(), Batch: append([]int(nil), batch...), Hidden: c.Hidden, Layers: c.Layers}
	if o.EP && !c.IsMoE() {
		p.Notes = append(p.Notes, "expert parallelism asked for, but the model has no routed experts")
	}
	sh, err := shard(c, o.TP, p.EP)
	if err != nil {
		return Plan{}, err
	}
	for _, m := range batch {
		p.GEMMs = append(p.GEMMs, sh.stepGEMMs(m)...)
	}
	p.collectives(c, o)
	p.Notes = append(p.Notes, "attention over the KV cache (QKᵀ, PV) is not a weight GEMM and is not planned")
	return p, nil
}

// sharded is a model's dimensions on one rank of tensor-parallel size tp.
type sharded struct {
	c                             Config
	tp                            int
	ep                            bool
	heads, kvHeads, dense, shared int
	expertsLocal, moeI, vocab     int
}

// shard divides the model's dimensions over tp ranks, saying every one
// that does not divide.
func shard(c Config, tp int, ep bool) (sharded, error) {
	var errs []error
	div := func(v int, field string) int {
		if v%tp != 0 {
			errs = append(errs, fmt.Errorf("%s %d is not divisible by tp %d", field, v, tp))
			return 0
		}
		return v / tp
	}
	sh := sharded{c: c, tp: tp, ep: ep}
	sh.heads = div(c.Heads, "num_attention_heads")
	sh.dense = c.Intermediate
	if c.DenseLayers > 0 {
		sh.dense = div(c.Intermediate, "intermediate_size")
	}
	sh.shared = c.SharedIntermediate
	if sh.shared == 0 {
		sh.shared = c.SharedExperts * c.MoEIntermediate
	}
	if sh.shared > 0 {
		sh.shared = div(sh.shared, "shared expert width")
	}
	sh.expertsLocal, sh.moeI = c.Experts, c.MoEIntermediate
	if c.IsMoE() {
		if ep {
			sh.expertsLocal = div(c.Experts, "n_routed_experts")
		} else {
			sh.moeI = div(c.MoEIntermediate, "moe_intermediate_size")
		}
	}
	if c.Attention == AttnGQA {
		switch {
		case c.KVHeads >= tp && c.KVHeads%tp == 0:
			sh.kvHeads = c.KVHeads / tp
		case c.KVHeads < tp && tp%c.KVHeads == 0:
			sh.kvHeads = 1 // vLLM replicates the KV heads
		default:
			errs = append(errs, fmt.Errorf("num_key_value_heads %d does not fit tp %d", c.KVHeads, tp))
		}
	}
	if len(errs) > 0 {
		return sharded{}, fmt.Errorf("model %s at tp %d: %w", c.Name, tp, errors.Join(errs...))
	}
	sh.vocab = (c.Vocab + vocabPad - 1) / vocabPad * vocabPad
	sh.vocab = (sh.vocab + tp - 1) / tp
	return sh, nil
}

// module is the path of a module in layer l, for the served dtype.
func module(l int, s string) string { return fmt.Sprintf("model.layers.%d.%s", l, s) }

// stepGEMMs are the GEMMs of one decode step of batch m, in plan order.
func (sh sharded) stepGEMMs(m int) []GEMM {
	c := sh.c
	var out []GEMM
	add := func(name string, n, k, b, per int, mod string) {
		g := GEMM{Name: name, Step: m, M: m, N: n, K: k, Batch: b, Dtype: "bf16", Served: c.Quant.Served(mod), PerStep: per}
		if g.Served != "" {
			g.Module = mod
		}
		out = append(out, g)
	}
	// Module paths for the served dtype: a layer that has the MLP kind.
	attnLayer, moeLayer, L := 0, c.DenseLayers, c.Layers
	switch c.Attention {
	case AttnMLA:
		qk := c.QKNope + c.QKRope
		if c.QLoraRank > 0 {
			// q_a and kv_a (with the rope key) fused, replicated on every rank.
			add("q_a+kv_a", c.QLoraRank+c.KVLoraRank+c.QKRope, c.Hidden, 0, L, module(attnLayer, "self_attn.fused_qkv_a_proj"))
			add("q_b", sh.heads*qk, c.QLoraRank, 0, L, module(attnLayer, "self_attn.q_b_proj"))
		} else {
			add("q", sh.heads*qk, c.Hidden, 0, L, module(attnLayer, "self_attn.q_proj"))
			add("kv_a", c.KVLoraRank+c.QKRope, c.Hidden, 0, L, module(attnLayer, "self_attn.kv_a_proj_with_mqa"))
		}
		// Absorbed MLA at decode: per head, q_nope into the latent and
		// the latent output back to v_head_dim. vLLM dequantizes kv_b_proj
		// to BF16 copies for these batched products when it loads the
		// weights (it has no quantized bmm on CUDA), so they are BF16 as
		// served whatever the checkpoint's format: no module, no served
		// dtype.
		add("w_uk", c.KVLoraRank, c.QKNope, sh.heads, L, "")
		add("w_uv", c.VHeadDim, c.KVLoraRank, sh.heads, L, "")
		add("o_proj", c.Hidden, sh.heads*c.VHeadDim, 0, L, module(attnLayer, "self_attn.o_proj"))
	default:
		add("qkv", (sh.heads+2*sh.kvHeads)*c.HeadDim, c.Hidden, 0, L, module(attnLayer, "self_attn.qkv_proj"))
		add("o_proj", c.Hidden, sh.heads*c.HeadDim, 0, L, module(attnLayer, "self_attn.o_proj"))
	}
	if c.DenseLayers > 0 {
		add("dense.gate_up", 2*sh.dense, c.Hidden, 0, c.DenseLayers, module(0, "mlp.gate_proj"))
		add("dense.down", c.Hidden, sh.dense, 0, c.DenseLayers, module(0, "mlp.down_proj"))
	}
	if c.IsMoE() {
		add("router", c.Experts, c.Hidden, 0, c.MoELayers, module(moeLayer, "mlp.gate"))
		out = append(out, sh.expertGEMMs(m, moeLayer)...)
		if sh.shared > 0 {
			add("shared.gate_up", 2*sh.shared, c.Hidden, 0, c.MoELayers, module(moeLayer, "mlp.shared_experts.gate_proj"))
			add("shared.down", c.Hidden, sh.shared, 0, c.MoELayers, module(moeLayer, "mlp.shared_experts.down_proj"))
		}
	}
	add("lm_head", sh.vocab, c.Hidden, 0, 1, "lm_head")
	return out
}

// expertGEMMs are the routed experts' grouped GEMMs of a step of batch m.
func (sh sharded) expertGEMMs(m, moeLayer int) []GEMM {
	c := sh.c
	var out []GEMM
	groups := expertGroups(c, m, sh.tp, sh.ep, sh.expertsLocal)
	for _, grp := range groups {
		// Two groups (tokens spread unevenly) get names that tell them
		// apart: experts.w13.m3 has 3 tokens per expert.
		suffix := ""
		if len(groups) > 1 {
			suffix = fmt.Sprintf(".m%d", grp.tokens)
		}
		w13 := GEMM{Name: "experts.w13" + suffix, Step: m, M: grp.tokens, N: 2 * sh.moeI, K: c.Hidden, Batch: grp.experts,
			Dtype: "bf16", Module: module(moeLayer, "mlp.experts.0.gate_proj"), PerStep: c.MoELayers}
		w2 := GEMM{Name: "experts.w2" + suffix, Step: m, M: grp.tokens, N: c.Hidden, K: sh.moeI, Batch: grp.experts,
			Dtype: "bf16", Module: module(moeLayer, "mlp.experts.0.down_proj"), PerStep: c.MoELayers}
		for _, g := range []*GEMM{&w13, &w2} {
			if g.Served = c.Quant.Served(g.Module); g.Served == "" {
				g.Module = ""
			}
		}
		out = append(out, w13, w2)
	}
	return out
}

// collectives adds the step's all-reduces and all-to-all, and the notes on
// what the plan times; it also gives each GEMM served quantized its
// quantization group.
func (p *Plan) collectives(c Config, o Options) {
	for i := range p.GEMMs {
		if p.GEMMs[i].Served != "" {
			p.GEMMs[i].Group = c.Quant.GroupSize
		}
	}
	if p.TP > 1 {
		p.AllReduce = AllReduce{PerLayer: 2, Embedding: 1, BytesPerToken: 2 * c.Hidden}
		if o.NoEmbeddingAllReduce {
			p.AllReduce.Embedding = 0
		}
		p.AllReduce.PerStep = 2*c.Layers + p.AllReduce.Embedding
	}
	if c.IsMoE() {
		p.AllToAll = &AllToAll{TopK: c.TopK, Hidden: c.Hidden, BytesPerToken: c.TopK * c.Hidden * 2}
		p.Notes = append(p.Notes, fmt.Sprintf("routed experts: the experts a batch touches under uniform top-%d routing, timed as one grouped BF16 GEMM over their token segments (torch._grouped_mm, as MoE engines run them; a batched GEMM where PyTorch lacks it)", c.TopK))
	}
	if c.Quant.Weight != "" {
		p.QuantConfig = c.Quant.Raw
		p.Notes = append(p.Notes, fmt.Sprintf("weights served as %s are timed as served where vLLM is importable on the host (routed experts with its fused-MoE kernels, the other quantized layers with its quantized linear layers built from the model's quantization_config), else in BF16, an upper bound on their time", c.Quant.Weight))
	}
}

type expertGroup struct{ experts, tokens int }

// ActiveExperts is how many of n experts (of E in all, top-k routing,
// uniform) a batch of m tokens touches: n·(1 − (1 − k/E)^m), rounded, at
// least 1 and at most min(n, tokens).
func ActiveExperts(n, e, k, m, tokens int) int {
	a := int(math.Round(float64(n) * (1 - math.Pow(1-float64(k)/float64(e), float64(m)))))
	a = max(a, 1)
	return min(a, n, tokens)
}

// expertGroups splits the routed tokens of a batch of m over the experts on
// one GPU: without EP every GPU holds a slice of every expert and sees all
// k·m routed tokens; with EP a GPU holds E/tp whole experts and gets k·m/tp
// of the tokens. Tokens spread evenly, so at most two sizes of group.
func expertGroups(c Config, m, tp int, ep bool, local int) []expertGroup {
	tokens := c.TopK * m
	n := c.Experts
	if ep {
		tokens = max(1, int(math.Round(float64(tokens)/float64(tp))))
		n = local
	}
	act := ActiveExperts(n, c.Experts, c.TopK, m, tokens)
	base, extra := tokens/act, tokens%act
	var out []expertGroup
	if extra > 0 {
		out = append(out, expertGroup{experts: extra, tokens: base + 1})
	}
	if act-extra > 0 {
		out = append(out, expertGroup{experts: act - extra, tokens: base})
	}
	return out
}

// Ms returns the plan's batch sizes, sorted.
func (p Plan) Ms() []int {
	out := append([]int(nil), p.Batch...)
	sort.Ints(out)
	return out
}
