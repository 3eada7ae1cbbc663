package sglanglog_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/enginelog"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
)

// FuzzAuto feeds arbitrary bytes in two chunks to the parser that tells the
// engine by itself: it must not panic, and records and summary stay sane.
func FuzzAuto(f *testing.F) {
	f.Add([]byte(startup), len(startup)/2)
	f.Add([]byte("[2025-07-02 07:41:58 DP0 TP0 EP0 PP1 CP2 MOE_DP3] Load weight end. elapsed=1e309 s, mem usage=-5 GB.\n"), 10)
	f.Add([]byte("[TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File \"x/sglang/srt/y.py\", line 1, in init_cuda_graphs\nException: CUDA out of memory\n"), 30)
	f.Add([]byte("Capturing batches (bs=1 avail_mem=1 GB): 100%|█| 99999999999999999999/3 [00:00<00:00]\r[2025-01-01 00:00:00 TP99999999999999999999] KV Cache is allocated. #tokens: 99999999999999999999, KV size: 1 GB"), 40)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		if cut < 0 || cut > len(b) {
			cut = len(b) / 2
		}
		p := enginelog.New(enginelog.Auto)
		s := vllmlog.NewSummary()
		recs := append(p.Write(b[:cut]), p.Write(b[cut:])...)
		recs = append(recs, p.Flush()...)
		for _, r := range recs {
			if r.Kind.String() == "unknown" || r.Rank < -1 || r.Tokens < 0 {
				t.Fatalf("bad record %+v", r)
			}
			if r.Bar != nil && (r.Bar.Done < 0 || r.Bar.Total < 0) {
				t.Fatalf("bad bar %+v", r.Bar)
			}
			s.Add(r)
		}
		s.Finish()
		if s.State == "" || phases.StageIndex(s.Stage) < 0 || len(s.Ranks) > 4096 || len(s.Dropped) > 16 {
			t.Fatalf("bad summary state %q stage %q, %d ranks, %d dropped", s.State, s.Stage, len(s.Ranks), len(s.Dropped))
		}
		// No size is negative: a negative one is dropped, said.
		if s.WeightsGiB != nil && *s.WeightsGiB < 0 {
			t.Fatalf("weights %g GiB", *s.WeightsGiB)
		}
		for _, r := range s.Ranks {
			if r.WeightsGiB != nil && *r.WeightsGiB < 0 {
				t.Fatalf("rank %+v weights %g GiB", r, *r.WeightsGiB)
			}
		}
	})
}

// summarize reads text with the engine-detecting parser.
func summarize(text string) *vllmlog.Summary {
	p := enginelog.New(enginelog.Auto)
	s := vllmlog.NewSummary()
	recs := append(p.Write([]byte(text)), p.Flush()...)
	for _, r := range recs {
		s.Add(r)
	}
	s.Finish()
	return s
}

// A negative "mem usage" is no weights size: dropped and said, never
// weights_gib -7.61.
func TestNegativeMemUsageDropped(t *testing.T) {
	s := summarize("[2025-04-03 04:46:31 TP0] Load weight begin. avail mem=78.50 GB\n" +
		"[2025-04-03 04:46:35 TP0] Load weight end. type=LlamaForCausalLM, avail mem=63.42 GB, mem usage=-7.61 GB.\n")
	if s.WeightsGiB != nil || len(s.Dropped) != 1 || !strings.Contains(s.Dropped[0], "-7.61 GiB") {
		t.Fatalf("weights %v, dropped %q", s.WeightsGiB, s.Dropped)
	}
	for _, r := range s.Ranks {
		if r.WeightsGiB != nil {
			t.Fatalf("rank %+v kept weights %g", r, *r.WeightsGiB)
		}
	}
}

// A log naming 100,000 ranks keeps 4,096 and says how many it dropped
// (all 100,000 were kept: 250 MB for a 38 MB log).
func TestManyNamedRanksBoundedAndSaid(t *testing.T) {
	var b strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&b, "[2025-04-03 04:46:35 TP%d] Load weight end. type=X, avail mem=63.42 GB, mem usage=15.08 GB.\n", i)
	}
	s := summarize(b.String())
	if len(s.Ranks) != 4096 || s.DroppedRanks != 100_000-4096 || len(s.Dropped) != 1 {
		t.Fatalf("%d ranks, %d dropped, %q", len(s.Ranks), s.DroppedRanks, s.Dropped)
	}
}
