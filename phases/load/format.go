package load

import (
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/enginelog"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/units"
)

// StallText is the one-line story of a stall, e.g.
// "STALLED at 75.8 GiB on GPUs 0-7 for 12 min", or with its node
// "STALLED at 75.8 GiB on gpu2, GPUs 0-7, for 12 min".
func StallText(s *phases.Stall) string {
	dur := units.Duration(s.ForS)
	if len(s.GPUs) == 0 {
		if s.Node != "" {
			return fmt.Sprintf("STALLED on %s: no progress for %s (no GPU memory readings)", s.Node, dur)
		}
		return fmt.Sprintf("STALLED: no progress for %s (no GPU memory readings)", dur)
	}
	lo, hi := s.MemoryGiB[0], s.MemoryGiB[0]
	for _, m := range s.MemoryGiB {
		lo, hi = min(lo, m), max(hi, m)
	}
	where := GPUList(s.GPUs)
	if s.Node != "" {
		where = s.Node + ", " + where + ","
	}
	if hi-lo <= 0.15 {
		return fmt.Sprintf("STALLED at %.1f GiB on %s for %s", hi, where, dur)
	}
	return fmt.Sprintf("STALLED at %.1f–%.1f GiB on %s for %s", lo, hi, where, dur)
}

// GPUList writes GPU indices compactly: "GPU 3", "GPUs 0-7", "GPUs 0-2,5".
func GPUList(idx []int) string {
	if len(idx) == 1 {
		return fmt.Sprintf("GPU %d", idx[0])
	}
	out := "GPUs "
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if i > 0 {
			out += ","
		}
		if j > i {
			out += fmt.Sprintf("%d-%d", idx[i], idx[j])
		} else {
			out += fmt.Sprintf("%d", idx[i])
		}
		i = j + 1
	}
	return out
}

// StatusLine is a one-line summary of a load's state, e.g.
// "weights · shards 31/62 ETA 4 min · 8 GPUs 41.2/74.9 GiB (55%) · 1.9 GiB/min · ETA 6 min".
func StatusLine(s phases.LoadState) string {
	parts := []string{phases.StageLabel(s.Stage) + " " + units.Duration(s.ElapsedS)}
	switch {
	case s.Engine == enginelog.SGLang:
		parts[0] = "SGLang " + parts[0]
	case s.VLLM != "":
		parts[0] = "vLLM " + s.VLLM + " " + parts[0]
	}
	if s.ShardsTotal > 0 {
		sh := fmt.Sprintf("shards %d/%d", s.ShardsDone, s.ShardsTotal)
		if s.ShardETA > 0 {
			sh += " ETA " + units.Duration(s.ShardETA)
		}
		parts = append(parts, sh)
	}
	pastWeights := phases.PastWeights(s.Stage)
	var used, exp, total, rate, eta float64
	known, n := 0, len(s.GPUs)
	for _, g := range s.GPUs {
		if !g.Known {
			continue
		}
		known++
		used += g.UsedGiB
		exp += g.ExpectedGiB
		total += g.TotalGiB
		rate += g.RateGiBMin
		eta = max(eta, g.ETASeconds)
	}
	switch {
	case n == 0:
		parts = append(parts, "no GPU readings")
	case known == 0:
		parts = append(parts, fmt.Sprintf("%d GPUs, memory unknown", n))
	default:
		g := fmt.Sprintf("%d GPUs avg %.1f", n, used/float64(known))
		switch {
		case exp > 0 && !pastWeights:
			g += fmt.Sprintf("/%.1f GiB (%.0f%% of the weights)", exp/float64(known), 100*used/exp)
		case total > 0:
			g += fmt.Sprintf("/%.1f GiB", total/float64(known))
		default:
			g += " GiB"
		}
		parts = append(parts, g, fmt.Sprintf("%.1f GiB/min", rate/float64(known)))
		if eta > 0 {
			parts = append(parts, "ETA "+units.Duration(eta))
		}
	}
	if s.KVCacheTokens > 0 {
		parts = append(parts, "KV "+units.Int(s.KVCacheTokens)+" tokens")
	}
	if s.Ready {
		parts = append(parts, "READY")
	}
	return strings.Join(parts, " · ")
}

// MilestoneText words a milestone for a status line or the notebook:
// "reached compile (at 5 min)", "weights loaded: 74.40 GiB in 1812 s".
func MilestoneText(m phases.Milestone) string {
	var text string
	switch m.Stage {
	case "vllm_version":
		return "vLLM " + m.Value
	case "stall_resumed":
		return "stall over: " + m.Value
	case "weights_loaded", "kv_cache_size", "compile_done", "cuda_graphs_done":
		text = phases.StageLabel(m.Stage)
	default:
		text = "reached " + phases.StageLabel(m.Stage)
	}
	if m.Value != "" {
		text += ": " + m.Value
	}
	return text
}

// WaitsText says in words the waits a log reported (nil: ""): how many of
// each kind, how long each when the log says, and the last one's time.
func WaitsText(stalls []vllmlog.Stall) string {
	if len(stalls) == 0 {
		return ""
	}
	names := map[string]string{vllmlog.StallSHM: "shared-memory broadcast wait", vllmlog.StallNCCL: "NCCL collective wait",
		vllmlog.StallEngineWait: "wait for the engine's output"}
	var parts []string
	for _, kind := range []string{vllmlog.StallSHM, vllmlog.StallNCCL, vllmlog.StallEngineWait} {
		n, secs := 0, 0.0
		for _, st := range stalls {
			if st.Kind == kind {
				n, secs = n+1, st.Seconds
			}
		}
		if n == 0 {
			continue
		}
		p := fmt.Sprintf("%d %s", n, names[kind])
		if n > 1 {
			p += "s"
		}
		if secs > 0 {
			p += fmt.Sprintf(" of %s", units.Duration(secs))
		}
		parts = append(parts, p)
	}
	out := strings.Join(parts, ", ")
	if last := stalls[len(stalls)-1].Time; last != "" {
		out += ", the last at " + last
	}
	return out
}
