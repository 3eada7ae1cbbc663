package macropane

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/common"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// verdictEvents are a finished two-level sweep with its verdict, its SLO
// and a level whose server and client tokens disagree.
func verdictEvents() []phases.Event {
	sl := func(gen float64, agree bool, why string) *phases.ServerLevel {
		return &phases.ServerLevel{Available: true, MeanRunning: 128, MaxRunning: 128, GenerationTokS: gen, GenerationWindow: "client_window",
			TokensAgree: agree, TokenAgreement: why, WindowClientTokens: 7680, WindowGenerationTokens: 7680 * gen / 1408, WindowS: 7680.0 / 1408}
	}
	why := "the server generated 16% more tokens than this client received over the level's throughput window (8,900 against 7,680): another client of the server, or requests this client had given up on"
	return []phases.Event{
		phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Concurrency: 128, Completed: 100, OutputThroughput: 1405, Server: sl(1410, true, "")}),
		phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Concurrency: 256, Completed: 100, OutputThroughput: 1408, Server: sl(1638, false, why),
			Warnings: []string{why}}),
		phases.New(clock0, phases.KindMacroSLO, phases.SLOMet{Spec: "ttft=2s", MaxConcurrency: 64, Text: "largest C meeting the SLO (ttft=2s for 90% of requests): 64"}),
		phases.New(clock0, phases.KindMacroPlateau, phases.Plateau{Concurrency: 128, OutputThroughput: 1405, Reason: "max_num_seqs",
			Evidence: "plateau at C=128: 128 of 128 sequences running (max_num_seqs), KV 43%, 128 waiting at C=256 — raise --max-num-seqs"}),
	}
}

// TestVerdictBanner: the plateau's class, the SLO's largest C and what to
// do are on the pane, at 80×24 and at 120×36; a disagreement between the
// server's tokens and the client's is said, and marked beside the rates.
func TestVerdictBanner(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 36}} {
		m := newPane(t, size[0], size[1], false)
		m.Update(common.EventsMsg{At: clock0, Events: verdictEvents()})
		v := m.View()
		panetest.Fits(t, v, size[0], size[1])
		p := plain(m)
		for _, want := range []string{"plateau at C=128: 1,405 tok/s — max_num_seqs · SLO met up to C=64", "128 of 128 sequences running",
			"C=256: server tokens +16% against this client's — another client", "1,638 ≠"} {
			if !strings.Contains(p, want) {
				t.Errorf("%dx%d: no %q in\n%s", size[0], size[1], want, p)
			}
		}
		if !strings.Contains(p, "raise --max-num-seqs: 128 of 128") {
			t.Errorf("%dx%d: the action is not first:\n%s", size[0], size[1], p)
		}
	}
}

// TestSearchBanner: the SLO search shows its interval and latest verdict as
// it goes, and its answer beside the plateau once done, at 80×24 and 120×36.
func TestSearchBanner(t *testing.T) {
	up := 128.0
	going := phases.Search{Mode: phases.SearchConcurrency, Unit: "concurrency", SLO: "tpot=50ms", RequiredShare: 0.9,
		Lower: 64, Answer: 64, Upper: &up, Runs: 8,
		Steps: []phases.SearchStep{{Value: 128, Phase: "ladder", Share: 0.34, Why: phases.StopSLO}}}
	done := going
	up2 := 116.0
	done.Lower, done.Answer, done.Upper, done.Done, done.Runs = 112, 112, &up2, true, 12
	done.Text = "largest C meeting the SLO (tpot=50ms for 90% of requests): C=112, the limit in [112, 116) — 12 run(s)"
	for _, size := range [][2]int{{80, 24}, {120, 36}} {
		m := newPane(t, size[0], size[1], false)
		m.Update(common.EventsMsg{At: clock0, Events: []phases.Event{phases.New(clock0, phases.KindMacroSearch, going)}})
		panetest.Fits(t, m.View(), size[0], size[1])
		if p := plain(m); !strings.Contains(p, "limit in [64, 128)") || !strings.Contains(p, "34% within") {
			t.Errorf("%dx%d: the search as it goes is not shown:\n%s", size[0], size[1], p)
		}
		evs := append(verdictEvents(), phases.New(clock0, phases.KindMacroSearch, done))
		m.Update(common.EventsMsg{At: clock0, Events: evs})
		panetest.Fits(t, m.View(), size[0], size[1])
		p := plain(m)
		for _, want := range []string{"search: largest C meeting the SLO", "SLO limit C [112, 116)"} {
			if !strings.Contains(p, want) {
				t.Errorf("%dx%d: no %q in\n%s", size[0], size[1], want, p)
			}
		}
	}
}
