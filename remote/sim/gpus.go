package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// The load fractions (of Options.LoadTime) at which the stages happen.
const (
	fracContext  = 0.02 // workers create their CUDA contexts
	fracWeights0 = 0.04 // weights start streaming in
	fracWeights1 = 0.66 // the slowest GPU has its weights
	fracCompile  = 0.67
	fracKV0      = 0.81 // KV cache allocation
	fracKV1      = 0.83
	fracGraphs0  = 0.84 // CUDA graph capture
	fracGraphs1  = 0.95
	fracAPI      = 0.96 // engine up, API server starting
	fracReady    = 1.0
)

// contextGiB is what a CUDA context takes before any weights.
const contextGiB = 0.5

// gpuState is one simulated GPU.
type gpuState struct {
	usedGiB     float64
	releaseFrom float64
	releaseAt   time.Time
	busID       string
	uuid        string
	baseTemp    int
	util        float64
}

// GPU is a reading of one simulated GPU, for commands in other files.
type GPU struct {
	Index       int
	Name        string
	UUID        string
	BusID       string
	MemUsedMiB  int
	MemTotalMiB int
	UtilPct     int
	TempC       int
	PowerW      float64
	// What nvidia-smi dmon adds: the SM clock, the share of time held down
	// by the power cap, PCIe (MB/s) and NVLink (MiB/s) traffic.
	SMClockMHz                 float64
	PowerViolPct               float64
	PCIeRxMBs, PCIeTxMBs       float64
	NVLinkRxMiBs, NVLinkTxMiBs float64
}

var busIDs = []string{"0A", "18", "3B", "44", "87", "90", "B9", "C2"}

func (d *Deployment) initGPUs() {
	d.gpus = make([]gpuState, d.opt.GPUs)
	for i := range d.gpus {
		bus := fmt.Sprintf("%02X", 0x0A+i*0x11)
		if i < len(busIDs) {
			bus = busIDs[i]
		}
		d.gpus[i].busID = "00000000:" + bus + ":00.0"
		r := d.rng
		d.gpus[i].uuid = fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Intn(1<<16), r.Intn(1<<16), r.Intn(1<<16), r.Int63n(1<<48))
		d.gpus[i].baseTemp = 24 + r.Intn(7)
	}
}

// GPUs returns a reading of every simulated GPU.
func (d *Deployment) GPUs() []GPU {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]GPU, len(d.gpus))
	for i, g := range d.gpus {
		util := int(math.Round(g.util))
		out[i] = GPU{
			Index:       i,
			Name:        d.opt.GPUName,
			UUID:        g.uuid,
			BusID:       g.busID,
			MemUsedMiB:  int(math.Round(g.usedGiB * 1024)),
			MemTotalMiB: d.opt.GPUMemMiB,
			UtilPct:     util,
			TempC:       g.baseTemp + util*4/10,
			PowerW:      72 + float64(i%3)*3 + g.usedGiB*0.04 + float64(util)*5.4,
		}
		d.linksLocked(&out[i], g.util)
	}
	return out
}

// linksLocked sets what dmon adds to a reading: clocks that boost when
// busy (and drop under the power cap), and link traffic that grows with
// utilisation (all-reduces over NVLink, small PCIe traffic).
func (d *Deployment) linksLocked(g *GPU, util float64) {
	g.SMClockMHz = 345
	if util > 1 {
		g.SMClockMHz = 1980
	}
	if c := d.opt.PowerCapW; c > 0 && g.PowerW > c {
		g.PowerViolPct = min(100, (g.PowerW-c)/c*400)
		g.SMClockMHz *= c / g.PowerW
		g.PowerW = c
	}
	g.PCIeRxMBs, g.PCIeTxMBs = 12+util*3, 9+util*2
	if !d.opt.NoNVLink && d.opt.GPUs > 1 {
		g.NVLinkRxMiBs, g.NVLinkTxMiBs = util*150, util*148
	}
}

// tickGPUs drives the simulation until the deployment closes.
func (d *Deployment) tickGPUs() {
	period := d.opt.LoadTime / 400
	period = min(max(period, 10*time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case now := <-t.C:
			d.tick(now)
		}
	}
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// targetGiB is memory.used of GPU i at load fraction f, before any stall.
func (d *Deployment) targetGiB(s *serverProc, i int, f float64) float64 {
	if f < fracContext {
		return 0
	}
	w := clamp01((f - fracWeights0) / (s.wEnd[i] - fracWeights0))
	m := contextGiB + (d.opt.WeightsGiB-contextGiB)*w
	if f >= fracKV0 {
		m += d.opt.KVCacheGiB * 0.96 * clamp01((f-fracKV0)/(fracKV1-fracKV0))
	}
	if f >= fracGraphs0 {
		m += d.opt.KVCacheGiB * 0.04 * clamp01((f-fracGraphs0)/(fracGraphs1-fracGraphs0))
	}
	return m
}

// growLocked sets memory and utilization while the server loads or serves.
// Memory never goes down while loading; a reading lags its target by a small
// random amount so the GPUs do not move in lock step. When a stall is
// configured, memory stops at it and the load stops progressing.
func (d *Deployment) growLocked(s *serverProc, f float64) {
	for i := range d.gpus {
		g := &d.gpus[i]
		u := d.targetGiB(s, i, f)
		if u > 0 && u < d.opt.WeightsGiB+d.opt.KVCacheGiB-1e-9 && f < fracGraphs1 {
			u -= d.rng.Float64() * 0.12
		}
		if s.stallAt > 0 && u >= s.stallAt {
			u = s.stallAt
			s.stalled = true
		}
		if u > g.usedGiB {
			g.usedGiB = u
		}
		switch {
		case s.stalled:
			g.util = 0
		case s.stage == phases.StageReady:
			g.util = d.serveUtil()
		case d.emu != nil && d.opt.Emulator.ServeBeforeReady && d.serveUtil() > 0:
			g.util = d.serveUtil() // served before ready: busy with requests
		case s.stage == phases.StageCompile || s.stage == phases.StageCUDAGraphs:
			g.util = 55 + d.rng.Float64()*45
		case f >= fracContext:
			g.util = d.rng.Float64() * 4
		}
	}
}

// releaseLocked gives memory back after the server exits.
func (d *Deployment) releaseLocked(now time.Time) {
	for i := range d.gpus {
		g := &d.gpus[i]
		g.util = 0
		if g.usedGiB == 0 {
			continue
		}
		k := clamp01(now.Sub(g.releaseAt).Seconds() / releaseTime.Seconds())
		g.usedGiB = g.releaseFrom * (1 - k)
		if k >= 1 {
			g.usedGiB, g.releaseFrom = 0, 0
		}
	}
}
