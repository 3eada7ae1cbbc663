package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// nccl keeps the NCCL phase's figures: each all-reduce burst (as the
// budget takes it: in the step, from a graph, or eager) with its bus
// bandwidth, each All-to-All size, or why there were no collectives.
func (b *BaselineFigures) nccl(in budgetInputs, events []phases.Event) {
	if in.noComm != nil {
		b.NoCollectives = in.noComm.Reason
		if b.TP == 0 {
			b.TP = in.noComm.TP
		}
	}
	for m, br := range in.bursts {
		f := AllReduceFigure{M: m, NProc: br.NProc, Count: br.Count, Bytes: br.Bytes}
		switch {
		case br.InStepMs > 0:
			f.StepMs, f.PerOpUs = br.InStepMs, br.InStepPerOpUs
		case br.GraphMs > 0:
			f.StepMs, f.PerOpUs = br.GraphMs, br.GraphPerOpUs
		default:
			f.StepMs, f.PerOpUs = br.TotalMs, br.PerOpUs
		}
		if f.PerOpUs <= 0 && br.Count > 0 {
			f.PerOpUs = 1000 * f.StepMs / float64(br.Count)
		}
		if n := float64(br.NProc); n > 1 && f.PerOpUs > 0 {
			f.BusBWGBs = 2 * (n - 1) / n * float64(br.Bytes) / (f.PerOpUs * 1e3)
		}
		if f.StepMs > 0 {
			b.AllReduce = append(b.AllReduce, f)
		}
	}
	sort.Slice(b.AllReduce, func(i, j int) bool { return b.AllReduce[i].M < b.AllReduce[j].M })
	seen := map[int]int{}
	for _, ev := range events {
		if d, ok := ev.Data.(phases.NCCLAllToAll); ok && d.Us > 0 {
			f := AllToAllFigure{Tokens: d.Tokens, NProc: d.NProc, Bytes: d.Bytes, Us: d.Us, BusBWGBs: d.BusBW}
			if i, ok := seen[d.Tokens]; ok {
				b.AllToAll[i] = f // the latest of each size
				continue
			}
			seen[d.Tokens] = len(b.AllToAll)
			b.AllToAll = append(b.AllToAll, f)
		}
	}
	sort.Slice(b.AllToAll, func(i, j int) bool { return b.AllToAll[i].Tokens < b.AllToAll[j].Tokens })
}

// others reads the run's TP, the host's GPUs, the load's KV capacity, the
// SLO search's answer and the speculative acceptance.
func (b *BaselineFigures) others(events []phases.Event) {
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case phases.RunStarted:
			if d.Identity.TP > 0 {
				b.TP = d.Identity.TP
			}
		case phases.SystemInfo:
			if d.GPUCount > 0 {
				b.GPUs = d.GPUCount
			}
		case phases.Milestone:
			if d.Stage == "kv_cache_size" {
				if n, ok := leadingInt(d.Value); ok {
					b.KVTokens = n
				}
			}
		case phases.Search:
			if d.Done {
				s := d
				b.Search = &s
			}
		}
	}
	for _, l := range b.Levels {
		if l.SpecAcceptLen > 0 {
			b.SpecAcceptLength, b.SpecAt = l.SpecAcceptLen, l.C
		}
	}
}

// leadingInt reads "131,072 tokens" as 131072.
func leadingInt(s string) (int64, bool) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(f[0], ",", ""), 10, 64)
	return n, err == nil && n > 0
}

// kvSeqs is how many of the sweep's requests the KV cache holds: the most
// running over the KV cache's use then, at the level that used it most;
// else the load's capacity over a request's tokens.
func (b *BaselineFigures) kvSeqs() {
	best := BaselineLevel{}
	for _, l := range b.Levels {
		if l.MaxKV > best.MaxKV && l.MaxRunning > 0 {
			best = l
		}
	}
	if best.MaxKV >= 0.05 {
		b.KVSeqs = best.MaxRunning / best.MaxKV
		b.KVFrom = fmt.Sprintf("%.0f running at KV %.0f%% at C=%d", best.MaxRunning, 100*best.MaxKV, best.C)
		return
	}
	if per := b.PromptLen + b.OutputLen; b.KVTokens > 0 && per > 0 {
		b.KVSeqs = float64(b.KVTokens) / per
		b.KVFrom = fmt.Sprintf("the load's KV cache of %d tokens over %.0f tokens a request", b.KVTokens, per)
	}
}

// budgetAt is the budget's split at C (ok false when none).
func (b BaselineFigures) budgetAt(c int) (BudgetFigures, bool) {
	for _, f := range b.Budgets {
		if f.C == c {
			return f, true
		}
	}
	return BudgetFigures{}, false
}
