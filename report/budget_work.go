package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// workloadKeys are the sweep's parameters a measurement at its levels
// depends on (the prompts and outputs the engine served), with the words
// the notebook says them in.
var workloadKeys = [][2]string{{"input_len", "input"}, {"output_len", "output"}, {"dataset", "dataset"}, {"prefix_len", "prefix"}, {"range_ratio", "range ratio"}}

// workload is what a sweep measured under, key by key, from its
// PhaseStarted parameters (nil when they say nothing of it).
type workload map[string]string

func workloadOf(params any) workload {
	m, ok := params.(map[string]any)
	if !ok {
		return nil
	}
	w := workload{}
	for _, k := range workloadKeys {
		if v, ok := m[k[0]]; ok && v != nil && fmt.Sprint(v) != "" {
			w[k[0]] = fmt.Sprint(v)
		}
	}
	if len(w) == 0 {
		return nil
	}
	return w
}

// differs says how a part's workload differs from the sweep's, e.g.
// "measured at input 256; the sweep at input 1024" ("" when the same, or
// either is unknown).
func (w workload) differs(sweep workload) string {
	if w == nil || sweep == nil {
		return ""
	}
	var a, b []string
	for _, k := range workloadKeys {
		if w[k[0]] != sweep[k[0]] {
			a = append(a, k[1]+" "+orNone(w[k[0]]))
			b = append(b, k[1]+" "+orNone(sweep[k[0]]))
		}
	}
	if len(a) == 0 {
		return ""
	}
	return "measured at " + strings.Join(a, ", ") + "; the sweep at " + strings.Join(b, ", ")
}

// number is a decoded parameter as a float64 (0 when it is none).
func number(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// markStale marks each part of the whole split measured under another
// workload than the sweep's level it splits, and warns: no budget combines
// parts from different workloads silently.
func (in budgetInputs) markStale(b *BudgetSplit) {
	if b.Whole == nil {
		return
	}
	sweep := in.workOf[phases.Macro][b.Concurrency]
	var names []string
	why := ""
	for i, p := range b.Whole.Parts {
		if p.Step == "" || p.Step == phases.Macro {
			continue
		}
		if d := in.workOf[p.Step][p.Level].differs(sweep); d != "" {
			b.Whole.Parts[i].Stale = d
			names = append(names, p.Name)
			why = d
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		names = slices.Compact(names)
		b.Warnings = append(b.Warnings, fmt.Sprintf("not measured together: %s %s (`profdeck run` measures them again; with --keep it keeps them, marked)",
			strings.Join(names, ", "), why))
	}
}
