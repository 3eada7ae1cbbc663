package diagnose

import (
	"fmt"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
)

// Thresholds of the verdict rules.
const (
	busyGPUPct = 90.0 // a GPU at or above this is busy
	idleGPUPct = 10.0 // at or below, idle
	hotCPUPct  = 40.0 // a process at or above this is busy on the CPU
	readingBps = 64 << 10
)

var stageWords = map[string]string{
	phases.StageStarting: "start-up", phases.StageWeights: "weights", phases.StageCompile: "torch.compile",
	phases.StageKVCache: "KV cache", phases.StageCUDAGraphs: "CUDA graphs", phases.StageReady: "ready",
}

// markBehind flags the ranks that never reached the furthest stage any
// rank reached.
func markBehind(ranks []phases.RankEvidence) []phases.RankEvidence {
	out := append([]phases.RankEvidence(nil), ranks...)
	sort.Slice(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	if len(out) < 2 {
		return out
	}
	top := -1
	for _, r := range out {
		top = max(top, phases.StageIndex(r.Stage))
	}
	// Some stages are printed by rank 0 alone: a rank is behind only when
	// at least half of the ranks (and two) reached the furthest stage.
	atTop := 0
	for _, r := range out {
		if phases.StageIndex(r.Stage) == top {
			atTop++
		}
	}
	if atTop < 2 || 2*atTop < len(out) {
		return out
	}
	for i := range out {
		out[i].Behind = phases.StageIndex(out[i].Stage) < top
	}
	return out
}

// evidence is what the rules look at, computed once.
type evidence struct {
	alive, gone      []phases.ProcEvidence
	readBps          float64
	ioKnown          bool
	hot              *phases.ProcEvidence
	stuckD           []phases.ProcEvidence
	gpuKnown         bool
	gpuBusy, gpuIdle bool
	maxUtil          float64
	behind, ahead    []phases.RankEvidence
	furthest         string
	collectiveFrame  string
}

func gatherEvidence(d *phases.Diagnosis) evidence {
	var e evidence
	for i, p := range d.Procs {
		if p.State == "gone" || p.State == "Z" || p.State == "X" {
			e.gone = append(e.gone, p)
			continue
		}
		e.alive = append(e.alive, p)
		e.readBps += p.ReadBps
		e.ioKnown = e.ioKnown || p.IOKnown
		if p.State == "D" {
			e.stuckD = append(e.stuckD, p)
		}
		if p.CPUPct >= hotCPUPct && (e.hot == nil || p.CPUPct > e.hot.CPUPct) {
			e.hot = &d.Procs[i]
		}
	}
	known := 0
	e.gpuBusy, e.gpuIdle = true, true
	for _, g := range d.GPUs {
		if g.UtilPct < 0 {
			continue
		}
		known++
		e.maxUtil = max(e.maxUtil, g.UtilPct)
		e.gpuBusy = e.gpuBusy && g.UtilPct >= busyGPUPct
		e.gpuIdle = e.gpuIdle && g.UtilPct <= idleGPUPct
	}
	e.gpuKnown = known > 0
	for _, r := range d.Ranks {
		if r.Behind {
			e.behind = append(e.behind, r)
		} else {
			e.ahead = append(e.ahead, r)
			e.furthest = r.Stage
		}
	}
	for _, s := range d.Stacks {
		for _, f := range s.Frames {
			l := strings.ToLower(f)
			if strings.Contains(l, "all_reduce") || strings.Contains(l, "barrier") || strings.Contains(l, "nccl") ||
				strings.Contains(l, "all_gather") || strings.Contains(l, "broadcast") {
				e.collectiveFrame = StackText(s) + " (" + f + ")"
				break
			}
		}
		if e.collectiveFrame != "" {
			break
		}
	}
	return e
}

// verdict names the most likely cause and the evidence lines behind it.
func verdict(d *phases.Diagnosis, cfg Config) (string, []string) {
	e := gatherEvidence(d)
	idle := "GPUs idle"
	if !e.gpuKnown {
		idle = "GPU use unknown"
	} else if !e.gpuIdle {
		idle = fmt.Sprintf("GPUs up to %.0f%%", e.maxUtil)
	}
	over := fmt.Sprintf("over %.0f s", d.SampleS)
	if cfg.Stalled > 0 {
		over = "for " + units.Duration(cfg.Stalled.Seconds())
	}
	var why []string
	for _, s := range d.Stacks {
		why = append(why, StackText(s))
	}
	switch {
	case len(d.Procs) == 0:
		return "server process gone (no process found in the launch's process group, the container or on the GPUs)", why
	case len(e.alive) == 0:
		return "server process gone", append([]string{fmt.Sprintf("%d known processes no longer exist", len(e.gone))}, why...)
	case len(e.behind) > 0 && len(e.ahead) > 0:
		v := fmt.Sprintf("%s behind (the others reached %s)", rankList(e.behind), stageWords[e.furthest])
		for _, r := range e.behind {
			why = append(why, fmt.Sprintf("rank %d stopped at %s: %s", r.Rank, stageWords[r.Stage], r.LastLine))
		}
		return v, why
	case cfg.Stage == phases.StageReady && cfg.Stalled == 0:
		gpus := "GPU use unknown"
		if e.gpuKnown {
			gpus = fmt.Sprintf("GPUs up to %.0f%%", e.maxUtil)
		}
		procs := fmt.Sprintf("%d processes", len(e.alive))
		if len(e.alive) == 1 {
			procs = "1 process"
		}
		return fmt.Sprintf("the server is up and loaded: nothing stalled (%s alive, %s)", procs, gpus), why
	case len(e.stuckD) > 0 && e.readBps < readingBps:
		p := e.stuckD[0]
		return fmt.Sprintf("blocked in the kernel on I/O (pid %d in state D, %s read %s, %s)", p.PID, rate(e.readBps), over, idle), why
	case e.gpuKnown && e.gpuBusy:
		v := fmt.Sprintf("spinning in a collective (GPU %.0f%%, no progress %s)", e.maxUtil, over)
		if e.collectiveFrame != "" {
			why = append([]string{e.collectiveFrame}, why...)
		}
		return v, why
	case e.ioKnown && e.readBps >= readingBps:
		return fmt.Sprintf("still reading weights at %s: slow, not stopped (%s)", rate(e.readBps), idle), why
	case e.hot != nil && (!e.gpuKnown || !e.gpuBusy):
		return fmt.Sprintf("busy on the CPU (pid %d %s at %.0f%% CPU, %s read, %s)", e.hot.PID, e.hot.Name, e.hot.CPUPct, rate(e.readBps), idle), why
	case e.ioKnown && pastWeights(cfg.Stage):
		return fmt.Sprintf("idle during %s (%s read, no CPU, %s %s): waiting on something that never came", stageWords[cfg.Stage], rate(e.readBps), idle, over), why
	case e.ioKnown:
		v := fmt.Sprintf("weights I/O stopped (%s %s, %s)", rate(e.readBps), over, idle)
		if total := readTotal(e.alive); total > 0 {
			why = append(why, fmt.Sprintf("%s read before it stopped", bytesText(float64(total))))
		}
		return v, why
	}
	return "no clear cause: /proc/PID/io is not readable (run profdeck as the server's user or root)", why
}

func rankList(rs []phases.RankEvidence) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", rs[0].Rank)
	}
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprint(r.Rank))
	}
	return "ranks " + strings.Join(s, ", ")
}

func readTotal(ps []phases.ProcEvidence) int64 {
	var t int64
	for _, p := range ps {
		t += p.ReadTotal
	}
	return t
}

// rate is a read rate in words: "0 B/s", "38.15 MiB/s".
func rate(bps float64) string { return bytesText(bps) + "/s" }

func bytesText(b float64) string { return units.Bytes(int64(b)) }

// pastWeights reports whether the load's stage is after the weights.
func pastWeights(stage string) bool {
	return phases.StageIndex(stage) > phases.StageIndex(phases.StageWeights)
}
