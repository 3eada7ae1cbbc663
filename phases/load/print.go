package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/diagnose"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/units"
)

// printer writes the headless `load` command's output.
type printer struct {
	out       io.Writer
	json      bool
	every     time.Duration
	state     *phases.LoadState
	lastPrint time.Time
}

func (p *printer) event(ev phases.Event) {
	if p.json {
		if ev.Kind == phases.KindGPUSample || ev.Kind == phases.KindLogLine {
			return // the state carries the samples; log lines are for the cockpit
		}
		if ev.Kind == phases.KindLoadState && ev.Time.Sub(p.lastPrint) < p.every {
			s := ev.Data.(phases.LoadState)
			p.state = &s
			return
		}
		if ev.Kind == phases.KindLoadState {
			p.lastPrint = ev.Time
			s := ev.Data.(phases.LoadState)
			p.state = &s
		}
		b, _ := json.Marshal(ev)
		fmt.Fprintln(p.out, string(b))
		return
	}
	stamp := ev.Time.Format("15:04:05")
	switch d := ev.Data.(type) {
	case phases.LoadState:
		p.state = &d
		if ev.Time.Sub(p.lastPrint) >= p.every {
			p.lastPrint = ev.Time
			fmt.Fprintf(p.out, "%s %s\n", stamp, StatusLine(d))
		}
	case phases.Milestone:
		text := MilestoneText(d)
		fmt.Fprintf(p.out, "%s %s (at %s)\n", stamp, text, FormatDuration(d.AtS))
	case phases.LoadFailure:
		fmt.Fprintf(p.out, "%s FAILED (%s): %s\n", stamp, d.Kind, d.Line)
	case phases.Stall:
		fmt.Fprintf(p.out, "%s %s\n", stamp, StallText(&d))
	case phases.Diagnosis:
		for _, l := range diagnose.Lines(d) {
			fmt.Fprintf(p.out, "%s %s\n", stamp, l)
		}
	case phases.ServerEvent:
		fmt.Fprintf(p.out, "%s server %s: %s\n", stamp, d.Action, d.Detail)
	case phases.ErrorEvent:
		fmt.Fprintf(p.out, "%s error: %s: %s\n", stamp, d.Where, d.Err)
	case phases.LogLine:
		if d.Level == "NOTE" {
			fmt.Fprintf(p.out, "%s note: %s\n", stamp, d.Text)
		}
	}
}

func (p *printer) finish(end Ending, err error, stderr io.Writer) int {
	if p.state != nil && !p.json {
		fmt.Fprintf(p.out, "%s %s\n", time.Now().Format("15:04:05"), StatusLine(*p.state))
	}
	if p.json {
		b, _ := json.Marshal(map[string]any{"ending": end.Kind, "reason": end.Reason, "state": p.state, "diagnosis": end.Diagnosis})
		fmt.Fprintln(p.out, string(b))
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "profdeck load: interrupted before the load ended")
		} else {
			fmt.Fprintf(stderr, "profdeck load: %v\n", err)
		}
		return 1
	}
	switch end.Kind {
	case EndReady:
		if !p.json {
			fmt.Fprintf(p.out, "ready: %s\n", end.Reason)
		}
		return 0
	default:
		fmt.Fprintf(stderr, "profdeck load: %s: %s\n", end.Kind, end.Reason)
		return 2
	}
}

// StatusLine is a one-line summary of a load's state, e.g.
// "weights · shards 31/62 ETA 4 min · 8 GPUs 41.2/74.9 GiB (55%) · 1.9 GiB/min · ETA 6 min".
func StatusLine(s phases.LoadState) string {
	parts := []string{phases.StageLabel(s.Stage) + " " + FormatDuration(s.ElapsedS)}
	if s.VLLM != "" {
		parts[0] = "vLLM " + s.VLLM + " " + parts[0]
	}
	if s.ShardsTotal > 0 {
		sh := fmt.Sprintf("shards %d/%d", s.ShardsDone, s.ShardsTotal)
		if s.ShardETA > 0 {
			sh += " ETA " + FormatDuration(s.ShardETA)
		}
		parts = append(parts, sh)
	}
	pastWeights := vllmlog.StageIndex(s.Stage) > vllmlog.StageIndex(vllmlog.StageWeights) || s.Stage == phases.StageFailed || s.Stage == phases.StageStopped
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
			parts = append(parts, "ETA "+FormatDuration(eta))
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
