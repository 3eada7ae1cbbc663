package report

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// The journal of a real campaign run (`profdeck run` on two H200s against
// scripts/fieldrig, TP 2) gives the budget its figures: the sweep's TPOT,
// the NCCL burst in the step (after GEMMs that evict L2) and the micro per-step sum at M = C, and
// the torch profile's windows at C=1 and at the plateau.
func TestFieldrigJournalBudget(t *testing.T) {
	rr, err := ReadJournalFile(filepath.Join("testdata", "fieldrig-h200x2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Skipped) != 0 {
		t.Fatalf("bad lines: %v", rr.Skipped)
	}
	b := Budget(rr.Events)
	about := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.0005 {
			t.Errorf("%s = %.4f ms, want %.4f", what, got, want)
		}
	}
	s := b.Single
	if !s.Complete() || s.Engine == nil {
		t.Fatalf("single stream: %+v", s)
	}
	about("C=1 TPOT", s.TPOTms, 3.103)
	about("C=1 all-reduce", s.AllReduceMs, 0.1278)
	about("C=1 GEMM", s.GEMMms, 1.8624)
	p := b.Plateau
	if p == nil || p.Concurrency != 128 || !p.Complete() || p.Engine == nil {
		t.Fatalf("plateau: %+v", p)
	}
	about("C=128 TPOT", p.TPOTms, 20.623)
	about("C=128 all-reduce", p.AllReduceMs, 0.4399)
	about("C=128 GEMM", p.GEMMms, 5.8143)
	if math.Abs(b.ProfileShare-0.068) > 0.001 {
		t.Errorf("profile communication share %.4f, want 0.068", b.ProfileShare)
	}
	md, err := RenderNotebook(rr.Events, goldenOpts())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Single stream (C=1)", "### Plateau (C=128)", "| **TPOT** (mean; median 3.10) |", "NCCL burst at M=128", "each after a GEMM that evicts L2"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("notebook lacks %q", want)
		}
	}
}
