package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// BudgetPart is one slice of TPOT: its name, time, share and source.
type BudgetPart struct {
	Group string  `json:"group,omitempty"`
	Name  string  `json:"name"`
	Ms    float64 `json:"ms"`
	Pct   float64 `json:"pct"` // of the TPOT the split splits
	// Source, Step, Run and Level say where the figure comes from;
	// Estimate that it is not a measurement of the part itself.
	Source   string `json:"source,omitempty"`
	Step     string `json:"step,omitempty"`
	Run      int    `json:"run,omitempty"`
	Level    int    `json:"level,omitempty"`
	Estimate bool   `json:"estimate,omitempty"`
	Stale    string `json:"stale,omitempty"` // measured under another workload than the sweep's
	// Rune draws the part in text bars.
	Rune rune `json:"-"`
}

// partRunes draw the whole split's parts in text bars.
var partRunes = map[string]rune{PartComm: '█', PartGEMM: '▓', PartAttention: '▒', PartOther: '░', PartHost: '▞', PartPrefill: '▚', PartNotAcc: '·'}

// Parts lists the budget's slices of TPOT in bar order: the whole split's
// (the decode step's parts, prefill, not accounted for) where the level
// has one; else all-reduce, GEMM, and the rest (which includes any part
// that was not measured) from the isolated benchmarks. It is empty without
// a TPOT.
func (b BudgetSplit) Parts() []BudgetPart {
	if len(b.Split) > 0 {
		return b.Split
	}
	return b.isolatedParts()
}

// isolatedParts is the isolated benchmarks' three-part split of the
// median TPOT.
func (b BudgetSplit) isolatedParts() []BudgetPart {
	if !b.HasTPOT {
		return nil
	}
	var ps []BudgetPart
	if b.HasAR {
		ps = append(ps, BudgetPart{Name: "all-reduce", Ms: b.AllReduceMs, Pct: b.Pct(b.AllReduceMs), Rune: '█'})
	}
	if b.HasGEMM {
		ps = append(ps, BudgetPart{Name: "GEMM", Ms: b.GEMMms, Pct: b.Pct(b.GEMMms), Rune: '▓'})
	}
	rest, _ := b.RestMs()
	ps = append(ps, BudgetPart{Name: b.restName(), Ms: rest, Pct: b.Pct(rest), Rune: '░'})
	return ps
}

func (b BudgetSplit) restName() string {
	switch {
	case !b.HasAR && !b.HasGEMM:
		return "unsplit (all-reduce and GEMM not measured)"
	case !b.HasAR:
		return "rest (incl. all-reduce, not measured)"
	case !b.HasGEMM:
		return "rest (incl. GEMMs, not measured)"
	}
	return "rest"
}

// Summary is the split in one line, e.g. "TPOT 12.40 ms = all-reduce
// 6.39 ms (51.5%) + GEMM 3.10 ms (25.0%) + rest 2.91 ms (23.5%)".
func (b BudgetSplit) Summary() string {
	if !b.HasTPOT {
		var known []string
		if b.HasAR {
			known = append(known, fmt.Sprintf("all-reduce %.2f ms", b.AllReduceMs))
		}
		if b.HasGEMM {
			known = append(known, fmt.Sprintf("GEMM %.2f ms", b.GEMMms))
		}
		if len(known) == 0 {
			return "no inputs measured yet"
		}
		return strings.Join(known, ", ") + " per step; TPOT not measured, so no split"
	}
	if len(b.Split) > 0 {
		return b.wholeSummary()
	}
	parts := b.Parts()
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprintf("%s %.2f ms (%.1f%%)", p.Name, p.Ms, p.Pct)
	}
	return fmt.Sprintf("TPOT %.2f ms (median) = %s", b.TPOTms, strings.Join(s, " + "))
}

// wholeSummary is the whole split in one line, its parts largest first,
// e.g. "TPOT 49.94 ms mean (median 52.06) = GEMM 20.91 ms (41.9%) + … +
// not accounted for -0.22 ms (-0.4%)".
func (b BudgetSplit) wholeSummary() (line string) {
	var s []string
	stale := ""
	for _, p := range b.Largest(len(b.Split)) {
		if math.Abs(p.Ms) >= 0.005 { // a part of 0 ms (no communication on one GPU) stays in the table
			name := p.Name
			if p.Stale != "" {
				name, stale = name+"*", p.Stale
			}
			s = append(s, fmt.Sprintf("%s %.2f ms (%.1f%%)", name, p.Ms, p.Pct))
		}
	}
	defer func() {
		if stale != "" {
			line += " (* " + stale + ")"
		}
	}()
	for _, p := range b.Split {
		if p.Name == PartNotAcc {
			s = append(s, fmt.Sprintf("%s %.2f ms (%.1f%%)", p.Name, p.Ms, p.Pct))
		}
	}
	return fmt.Sprintf("%s = %s", b.TPOTLabel(), strings.Join(s, " + "))
}

// TPOTLabel is the TPOT the budget splits, labelled: "TPOT 49.94 ms mean
// (median 52.06)", or "TPOT 52.06 ms (median)" for the isolated split.
func (b BudgetSplit) TPOTLabel() string {
	if len(b.Split) > 0 && b.MeanTPOTms > 0 {
		return fmt.Sprintf("TPOT %.2f ms mean (median %.2f)", b.MeanTPOTms, b.TPOTms)
	}
	return fmt.Sprintf("TPOT %.2f ms (median)", b.TPOTms)
}

// Largest is the budget's n largest measured parts, largest first (not
// accounted for is left out: it is no part of the step).
func (b BudgetSplit) Largest(n int) []BudgetPart {
	var ps []BudgetPart
	for _, p := range b.Parts() {
		if p.Name != PartNotAcc && !strings.HasPrefix(p.Name, "rest") && !strings.HasPrefix(p.Name, "unsplit") {
			ps = append(ps, p)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Ms > ps[j].Ms })
	return ps[:min(n, len(ps))]
}

// headline sets the budget's parts, its one line and, when more than 10%
// of TPOT is not accounted for, the measurement that would close it.
func (b *BudgetSplit) headline() {
	if w := b.Whole; w != nil && len(w.Parts) > 0 && w.TPOTms > 0 {
		b.MeanTPOTms = w.TPOTms
		pct := func(ms float64) float64 { return 100 * ms / w.TPOTms }
		for _, p := range w.Parts {
			b.Split = append(b.Split, BudgetPart{Group: p.Group, Name: p.Name, Ms: p.Ms, Pct: pct(p.Ms), Source: p.Source,
				Step: p.Step, Run: p.Run, Level: p.Level, Estimate: p.Estimate, Stale: p.Stale, Rune: partRunes[p.Name]})
		}
		na := w.NotAccountedMs
		if math.Abs(na) < 0.005 {
			na = 0 // under the printed hundredth: 0 in every view, never -0.00
		}
		b.Split = append(b.Split, BudgetPart{Name: PartNotAcc, Ms: na, Pct: pct(na),
			Source: "the mean TPOT less the measured parts", Rune: partRunes[PartNotAcc]})
		if math.Abs(pct(w.NotAccountedMs)) > 10 {
			b.Close = w.closing()
		}
	}
	b.Headline = b.Summary()
}

// closing names the measurement that would close what the parts leave of
// TPOT: what is not measured first, else a profile and sweep taken
// together.
func (w *TPOTSplit) closing() string {
	for _, u := range w.Unmeasured {
		if !strings.HasPrefix(u, "scheduling:") {
			return "measure " + u
		}
	}
	if w.MedianTPOTms > 0 && w.TPOTms > 1.25*w.MedianTPOTms {
		return fmt.Sprintf("the mean TPOT %.2f ms stands %.0f%% above its median %.2f ms: a few long token gaps carry it (the host stalled, a preemption, a prefill); "+
			"run the sweep's level C=%d again, with more requests (its ITL p99 shows the long gaps): the parts split a typical step",
			w.TPOTms, 100*(w.TPOTms/w.MedianTPOTms-1), w.MedianTPOTms, w.Concurrency)
	}
	for _, p := range w.Parts {
		if p.Name == PartHost && strings.Contains(p.Source, "profiler on") {
			return fmt.Sprintf("time the decode step at C=%d with the profiler off (the sweep's own token gaps, or the load just before the window): "+
				"the host's gaps here come from a profiled step, which the profiler slows", w.Concurrency)
		}
	}
	return fmt.Sprintf("profile the decode step again at C=%d under the sweep's own workload (`profdeck run` re-runs the steps out of date): "+
		"the parts were measured at other times or loads than the TPOT they split", w.Concurrency)
}

// BarWidths splits width cells among the parts by their share (negative
// parts get none), so that the widths add up to width when the parts cover
// TPOT.
func BarWidths(parts []BudgetPart, width int) []int {
	w := make([]int, len(parts))
	total := 0.0
	for _, p := range parts {
		if p.Ms > 0 {
			total += p.Ms
		}
	}
	if total <= 0 || width <= 0 || math.IsInf(total, 0) || math.IsNaN(total) {
		return w
	}
	// Largest-remainder rounding.
	used := 0
	rem := make([]float64, len(parts))
	for i, p := range parts {
		if p.Ms <= 0 {
			continue
		}
		exact := p.Ms / total * float64(width)
		w[i] = int(math.Floor(exact))
		rem[i] = exact - float64(w[i])
		used += w[i]
	}
	for n := 0; used < width && n < len(parts); n++ {
		best := -1
		for i := range parts {
			if parts[i].Ms > 0 && (best < 0 || rem[i] > rem[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		w[best]++
		rem[best] = -1
		used++
	}
	return w
}

// TextBar draws the parts as a bar of width runes.
func TextBar(parts []BudgetPart, width int) string {
	var sb strings.Builder
	for i, n := range BarWidths(parts, width) {
		sb.WriteString(strings.Repeat(string(parts[i].Rune), n))
	}
	return sb.String()
}

// Line is the whole split in one line by group, e.g. "27.81 ms mean =
// decode step 15.46 + prefill 12.64 + unaccounted -0.30".
func (s TPOTSplit) Line() string {
	var ps []string
	for _, g := range []string{GroupDecode, GroupPrefill, GroupScheduling} {
		for _, p := range s.Parts {
			if p.Group == g {
				ps = append(ps, fmt.Sprintf("%s %.2f", g, s.GroupMs(g)))
				break
			}
		}
	}
	ps = append(ps, fmt.Sprintf("unaccounted %.2f", s.NotAccountedMs))
	return fmt.Sprintf("%.2f ms mean = %s", s.TPOTms, strings.Join(ps, " + "))
}
