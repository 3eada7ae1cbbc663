package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// Two deployments: A on 8 GPUs, B on 4. Per user is 1000 / median TPOT,
// per GPU output tok/s ÷ GPUs. A at C=1: 100 and 12.5, at C=64: 25 and
// 250; B at C=1: 80 and 20 (beats A C=1 on neither... per GPU more, per
// user less: both on the front), at C=64: 20 and 240 (beaten by A C=64 on
// both). C, with no GPU count, is left out and said.
func TestParetoFront(t *testing.T) {
	lv := func(c int, tpot, out float64) phases.LevelResult {
		return phases.LevelResult{Concurrency: c, Completed: 20, MedianTPOTms: tpot, OutputThroughput: out}
	}
	a := Sweep{Path: "a.json", Deployment: &phases.Deployment{TP: 8}, Levels: []phases.LevelResult{lv(1, 10, 100), lv(64, 40, 2000)}}
	b := Sweep{Path: "b.json", HostGPUs: 4, Levels: []phases.LevelResult{lv(1, 12.5, 80), lv(64, 50, 960)}}
	c := Sweep{Path: "c.json", Levels: []phases.LevelResult{lv(1, 5, 1e6)}}
	p := ParetoOf([]Sweep{a, b, c})
	if len(p.Points) != 4 || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "C (c.json) left out") {
		t.Fatalf("points %d notes %v", len(p.Points), p.Notes)
	}
	var front []string
	for _, f := range p.Front {
		front = append(front, f.pointName())
	}
	if strings.Join(front, ",") != "A C=64,B C=1,A C=1" {
		t.Fatalf("front %v, want A C=64, B C=1, A C=1 by tokens/s per user", front)
	}
	if f := p.Front[1]; !capNear(f.TokSPerUser, 80) || !capNear(f.TokSPerGPU, 20) || f.GPUs != 4 {
		t.Fatalf("B C=1 = %+v", f)
	}
	for _, format := range []string{"svg", "png"} {
		img, err := ParetoChart(p, format)
		if err != nil || len(img) == 0 {
			t.Fatalf("%s: %v", format, err)
		}
		if format == "svg" && (!bytes.Contains(img, []byte("Pareto front")) || !bytes.Contains(img, []byte("B C=1"))) {
			t.Error("svg lacks the front or its labels")
		}
	}
	var out bytes.Buffer
	WritePareto(&out, p)
	if !strings.Contains(out.String(), "1000 / the level's median TPOT") || !strings.Contains(out.String(), "note: C (c.json) left out") {
		t.Errorf("text:\n%s", out.String())
	}
}
