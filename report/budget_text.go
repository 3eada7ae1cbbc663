package report

import (
	"fmt"
	"math"
	"strings"
)

// BudgetPart is one slice of a decode step: its name, time and share.
type BudgetPart struct {
	Name string
	Ms   float64
	Pct  float64
	// Rune draws the part in text bars.
	Rune rune
}

// Parts lists the known slices of TPOT in bar order: all-reduce, GEMM, and
// the rest (which includes any part that was not measured). It is empty
// without a TPOT.
func (b BudgetSplit) Parts() []BudgetPart {
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
	parts := b.Parts()
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprintf("%s %.2f ms (%.1f%%)", p.Name, p.Ms, p.Pct)
	}
	return fmt.Sprintf("TPOT %.2f ms = %s", b.TPOTms, strings.Join(s, " + "))
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
