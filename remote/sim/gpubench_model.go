package sim

import (
	"math"
	"math/rand"

	"github.com/profdeck/profdeck/phases/model"
)

// The simulated H200's timing model for the benchmark scripts, fitted to
// profdeck micro and nccl runs on a real H200 (phases/micro/testdata):
// a cold-L2 GEMM costs a fixed few microseconds plus its bytes over the
// streaming bandwidth (higher for a batched GEMM, which keeps more loads in
// flight), or its FLOPs over the sustained BF16 rate when that is longer.
const (
	gemmFixedUs     = 6.0    // launch and first-byte latency of one cold GEMM
	singleGBs       = 3500.0 // one weight matrix streamed from HBM
	batchedGBs      = 4300.0 // many matrices in one batched GEMM
	sustainedTFLOPs = 690.0  // dense BF16 under a sustained load
	launchGapUs     = 3.0    // saved per GEMM when the step is one CUDA graph

	// All-reduce: a PCIe-class latency per op so that a Kimi-K2.5 TP8 step
	// at M=1 (123 × 14 KiB) spends about 6 ms, half of a 12.5 ms TPOT.
	arBaseUs    = 6.0  // plus arPerRankUs per extra rank
	arPerRankUs = 6.0  //
	arBusGBs    = 40.0 // bus bandwidth once messages are large
	graphFactor = 0.85 // a captured burst saves the eager launch cost

	// All-to-All: latency-bound and flat up to 8 tokens per GPU, then the
	// per-peer size leaves the low-latency protocol: a cliff at 16.
	a2aBaseUs    = 25.0
	a2aPerTokUs  = 0.4
	a2aCliffTok  = 16
	a2aAlgBWGBs  = 18.0
	a2aOneRankUs = 22.0 // one rank: a local copy
)

// gemmMicros is one call of g on the simulated H200.
func gemmMicros(g model.GEMM) float64 {
	bw := singleGBs
	if g.Count() > 1 {
		bw = batchedGBs
	}
	mem := g.Bytes() / (bw * 1e3)
	comp := g.FLOPs() / (sustainedTFLOPs * 1e6)
	return gemmFixedUs + math.Max(mem, comp)
}

// allReduceMicros is one [M, hidden] all-reduce of bytes over n ranks.
func allReduceMicros(n int, bytes int64) float64 {
	if n <= 1 {
		return 16 // c10d's launch cost alone
	}
	bus := 2 * float64(n-1) / float64(n) * float64(bytes)
	return arBaseUs + arPerRankUs*float64(n-1) + bus/(arBusGBs*1e3)
}

// interNodeMicros is the network's share of a collective across nodes:
// bytes leaving each node over a 400 Gb/s link per GPU, plus its latency.
func interNodeMicros(nodes int, bytes int64) float64 {
	if nodes <= 1 {
		return 0
	}
	return netLatencyUs + float64(bytes)/(netGBs*1e3)
}

// The simulated network between nodes.
const (
	netLatencyUs = 8.0
	netGBs       = 45.0
)

// allToAllMicros is one all_to_all_single of bytes per rank.
func allToAllMicros(n, tokens int, bytes int64) float64 {
	if n <= 1 {
		return a2aOneRankUs
	}
	if tokens < a2aCliffTok {
		return a2aBaseUs + a2aPerTokUs*float64(tokens)
	}
	return a2aBaseUs + float64(bytes)/(a2aAlgBWGBs*1e3)
}

// benchRNG gives the small run-to-run spread of real timings.
type benchRNG struct{ r *rand.Rand }

func (d *Deployment) benchRand() benchRNG {
	d.mu.Lock()
	seed := d.opt.Seed
	d.mu.Unlock()
	return benchRNG{rand.New(rand.NewSource(seed + 7))}
}

// jitter returns a factor within ±frac of 1.
func (b benchRNG) jitter(frac float64) float64 { return 1 + frac*(2*b.r.Float64()-1) }
