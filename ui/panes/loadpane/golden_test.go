package loadpane

import (
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// eight are eight GPUs at about used GiB of 74.9 expected, rising at rate
// GiB/min.
func eight(used, rate float64) []phases.GPULoad {
	var gs []phases.GPULoad
	for i := range 8 {
		g := phases.GPULoad{Index: i, Known: true, Name: "NVIDIA H200", UsedGiB: used - 0.3*float64(i%3),
			ExpectedGiB: 74.9, TotalGiB: 140.4, RateGiBMin: rate}
		if rate > 0 {
			g.ETASeconds = (g.ExpectedGiB - g.UsedGiB) / rate * 60
		}
		gs = append(gs, g)
	}
	return gs
}

func sized(m *Model, w, h int) string {
	m.SetSize(w, h)
	return m.View()
}

// The pane's main states from the load's events, each filling both boxes:
// weights loading, stalled at 75.8 GiB, and ready.
func TestGoldenStates(t *testing.T) {
	m := bare()
	m.d.Now = func() time.Time { return time.Unix(1000, 0) }
	feed := func(evs ...phases.Event) { m.Update(common.EventsMsg{At: time.Unix(1000, 0), Events: evs}) }
	feed(ev(phases.KindLoadMilestone, phases.Milestone{Stage: phases.StageWeights, AtS: 12}),
		ev(phases.KindLoadState, phases.LoadState{Host: "gpu1", Stage: phases.StageWeights, ElapsedS: 610, VLLM: "0.12.0",
			GPUs: eight(41.2, 1.9), ShardsDone: 31, ShardsTotal: 62, ShardETA: 280, ShardSecPerIt: 9.1}))
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "weights-80x20", sized(m, 80, 20))
	panetest.Golden(t, "weights-120x36", sized(m, 120, 36))

	stall := &phases.Stall{GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, ForS: 720, Line: "Profiler started",
		MemoryGiB: []float64{75.8, 75.8, 75.8, 75.8, 75.8, 75.8, 75.8, 75.8}}
	feed(ev(phases.KindLoadStall, *stall),
		ev(phases.KindLoadState, phases.LoadState{Host: "gpu1", Stage: phases.StageWeights, ElapsedS: 1500, VLLM: "0.12.0",
			GPUs: eight(75.8, 0), ShardsDone: 62, ShardsTotal: 62, IdleS: 720, Stall: stall}))
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "stalled-80x20", sized(m, 80, 20))

	feed(ev(phases.KindLoadMilestone, phases.Milestone{Stage: phases.StageKVCache, AtS: 1620}),
		ev(phases.KindLoadMilestone, phases.Milestone{Stage: phases.StageReady, AtS: 1790, Value: "GET /health 200"}),
		ev(phases.KindLoadState, phases.LoadState{Host: "gpu1", Stage: phases.StageReady, ElapsedS: 1790, VLLM: "0.12.0",
			GPUs: eight(126.1, 0), ShardsDone: 62, ShardsTotal: 62, WeightsGiB: 74.4, KVCacheTokens: 1234567, Ready: true}))
	panetest.FitsBoxes(t, m)
	panetest.Golden(t, "ready-80x20", sized(m, 80, 20))
}
