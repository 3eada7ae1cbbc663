package sglanglog_test

import (
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
		if s.State == "" || phases.StageIndex(s.Stage) < 0 || len(s.Ranks) > 4096 {
			t.Fatalf("bad summary state %q stage %q, %d ranks", s.State, s.Stage, len(s.Ranks))
		}
	})
}
