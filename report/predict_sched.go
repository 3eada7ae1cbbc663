package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/profdeck/profdeck/phases/macro"
)

// caps reads a changed --max-num-seqs: the new seats, bounded by the KV
// cache, and the level the plateau moves to (the first of the baseline's
// sweep levels at or above the seats: where they fill).
func (pr *predictor) caps() {
	if !pr.changed("max-num-seqs") {
		return
	}
	n := flagFloat(pr.next, "max-num-seqs")
	if n < 1 {
		pr.cannot = append(pr.cannot, fmt.Sprintf("--max-num-seqs %q: not a number of seats", pr.next["max-num-seqs"]))
		return
	}
	b := pr.b
	if math.IsInf(pr.oldCap, 1) {
		pr.oldCap = pr.mostRunning()
		pr.warn("the baseline's --max-num-seqs is not known: taken as the most requests it ran, %.0f", pr.oldCap)
	}
	if kv := b.KVSeqs * pr.kvFactor(); kv > 0 && n > kv {
		pr.warn("--max-num-seqs %.0f is more than the KV cache holds of the sweep's requests, about %.0f (%s): the seats are taken as %.0f", n, kv, b.KVFrom, math.Floor(kv))
		n = math.Floor(kv)
	}
	switch {
	case n > pr.oldCap && b.Verdict != macro.LimitMaxSeqs:
		pr.line("--max-num-seqs %s → %.0f: the baseline's plateau is %s, not max_num_seqs: more seats leave it where it is", seats(pr.oldCap), n, orNone(b.Verdict))
		return
	case n < pr.oldCap && n >= float64(b.PlateauC) && b.Verdict != macro.LimitMaxSeqs:
		pr.line("--max-num-seqs %s → %.0f: the plateau's %d clients still fit the seats: the plateau stays", seats(pr.oldCap), n, b.PlateauC)
		pr.newCap = n
		return
	}
	pr.newCap = n
	pr.platC = pr.fillLevel(n)
	pr.line("--max-num-seqs %s → %.0f (verdict %s; KV cache for about %.0f requests, %s): the plateau at the first sweep level whose clients fill the %.0f seats, C=%.0f",
		seats(pr.oldCap), n, orNone(b.Verdict), b.KVSeqs, orNone(b.KVFrom), n, pr.platC)
}

// mostRunning is the most requests the baseline's sweep ran at once.
func (pr *predictor) mostRunning() float64 {
	m := 0.0
	for _, l := range pr.b.Levels {
		m = max(m, l.MaxRunning)
	}
	if m == 0 {
		return math.Inf(1)
	}
	return m
}

// fillLevel is the first sweep level at or above n seats (the top level,
// said, when the sweep ends below them).
func (pr *predictor) fillLevel(n float64) float64 {
	for _, l := range pr.b.Levels {
		if float64(l.C) >= n {
			return float64(l.C)
		}
	}
	top := pr.b.Levels[len(pr.b.Levels)-1].C
	pr.warn("the sweep's levels end at C=%d, below the %.0f seats: the plateau is taken at C=%d and may lie above it", top, n, top)
	return float64(top)
}

// points makes single stream, the plateau and a point per sweep level
// from the baseline's levels, with the seats as changed.
func (pr *predictor) points() {
	if c1, ok := pr.b.level(1); ok {
		pr.c1 = pr.pointFrom(c1, 1)
	}
	ref := pr.refLevel()
	pr.plat = pr.pointFrom(ref, pr.platC)
	p := pr.plat
	pr.line("the plateau from the baseline's C=%d (%.0f tok/s, mean TPOT %.2f ms, %.0f seats): decode step %.2f ms at batch %.0f (%s), prefills %.2f ms per output token (%.0f prompt tokens × %.4f ms), the rest %.2f ms as measured",
		ref.C, ref.TokS, ref.MeanTPOTms, p.refBatch, p.parts.sum(), p.batch, pr.stepText(p.batch), p.prefill, p.promptPerToken, perPrompt(p), tidy(p.rest))
	for _, l := range pr.b.Levels {
		pr.curve = append(pr.curve, pr.pointFrom(l, float64(l.C)))
	}
}

// stepText says how the step at a batch was had.
func (pr *predictor) stepText(batch float64) string {
	_, text, ok := pr.b.stepAt(batch)
	if !ok {
		return "the sweep's clean token gaps, linear in the batch: the budget split no decode step"
	}
	if pr.b.partial() {
		text += "; GEMM and communication only: attention, the other kernels and the host's gaps stay in the rest"
	}
	return text
}

func perPrompt(p point) float64 {
	if p.promptPerToken <= 0 {
		return 0
	}
	return p.prefill / p.promptPerToken
}

// refLevel is the baseline level the plateau is made from: its own
// plateau, or with the seats changed the level with as many clients per
// seat (a queue for the seats or none), the plateau's when none is nearer.
func (pr *predictor) refLevel() BaselineLevel {
	plat, _ := pr.b.level(pr.b.PlateauC)
	pc := float64(pr.b.PlateauC)
	if pr.platC == pc && min(pc, pr.newCap) == min(pc, pr.oldCap) || math.IsInf(pr.oldCap, 1) {
		return plat // the seats do not bind at the plateau
	}
	want := pr.platC / pr.newCap
	best, bestD := plat, math.Abs(math.Log(float64(plat.C)/pr.oldCap/want))
	for _, l := range pr.b.Levels {
		if d := math.Abs(math.Log(float64(l.C) / pr.oldCap / want)); d < bestD-1e-9 {
			best, bestD = l, d
		}
	}
	return best
}

// pointFrom is a point at clients made from the baseline's level ref:
// the decode step at the new batch, the prefills scaled by the requests
// decoding, the rest as measured.
func (pr *predictor) pointFrom(ref BaselineLevel, clients float64) point {
	p := point{clients: clients, ref: ref, refTPOT: ref.MeanTPOTms, spec: 1, replicas: 1, ttft: 1, mixed: ref.Mixed}
	p.refBatch, p.batch = min(float64(ref.C), pr.oldCap), min(clients, pr.newCap)
	p.seated = clients <= pr.newCap && float64(ref.C) <= pr.oldCap
	refParts, ok := pr.stepOrGap(p.refBatch)
	p.parts, _ = pr.stepOrGap(p.batch)
	if !ok && p.batch != p.refBatch {
		pr.cantTPOT(fmt.Sprintf("the decode step at batch %.0f: the budget split no decode step and the sweep's clean token gaps do not reach it (run the profile step)", p.batch))
	}
	pre := ref.PrefillMs
	if !ref.HasPrefill {
		if f, ok := pr.b.budgetAt(ref.C); ok {
			pre = f.PrefillMs
		}
	}
	scale := p.batch / p.refBatch
	p.rest = ref.MeanTPOTms - refParts.sum() - pre
	p.prefill, p.promptPerToken, p.promptPerStep = pre*scale, ref.PromptPerToken*scale, ref.PromptPerStep*scale
	return p
}

// stepOrGap is the decode step at a batch: split (stepAt), else whole
// from the sweep's clean token gaps, linear in the batch between the
// levels around it (all in the host's part: ok false).
func (pr *predictor) stepOrGap(batch float64) (stepParts, bool) {
	if s, _, ok := pr.b.stepAt(batch); ok {
		return s, true
	}
	gaps := map[int]float64{}
	for _, l := range pr.b.Levels {
		if l.CleanGapMs > 0 {
			gaps[int(min(float64(l.C), pr.oldCap))] = l.CleanGapMs
		}
	}
	g, _ := interpAt(gaps, batch)
	return stepParts{Host: g}, false
}

// chunkedMode reads whether flags turn chunked prefill on; set false when
// they say nothing.
func chunkedMode(f launchFlags) (on, set bool) {
	if _, ok := f["no-enable-chunked-prefill"]; ok {
		return false, true
	}
	if v, ok := f["enable-chunked-prefill"]; ok {
		v = strings.ToLower(v)
		return v == "" || v == "true" || v == "1", true
	}
	if _, ok := f["chunked-prefill"]; ok {
		return true, true
	}
	return false, false
}

// seats writes a --max-num-seqs, "not known" for none.
func seats(n float64) string {
	if math.IsInf(n, 1) || n <= 0 {
		return "not known"
	}
	return fmt.Sprintf("%.0f", n)
}

// needSplit reports whether the budget split the decode step (its GEMM at
// least); else it records why what cannot be predicted.
func (pr *predictor) needSplit(what string) bool {
	if len(pr.b.splits()) > 0 {
		return true
	}
	pr.cantTPOT(what + ": it rescales parts of the decode step, and the budget split none (run the micro, nccl and profile steps)")
	return false
}
