package macropane

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/components"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// On a wide screen the levels table has the server's prefix-cache hit rate
// and speculative acceptance; the live server line says them, with the
// mean accepted length.
func TestServerSignalsShown(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	m := newPane(t, 150, 30, true)
	replay(m, []phases.Event{
		phases.New(clock0, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 8, Requests: 16}),
		phases.New(clock0, phases.KindMacroServer, phases.ServerStats{Available: true, Engine: "vllm", Running: 8, KVCacheUsage: 0.3,
			CacheHitRate: f(0.333), SpecAcceptRate: f(0.595), SpecAcceptLength: f(2.19), IntervalS: 1}),
		phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Concurrency: 8, Completed: 16, OutputThroughput: 800,
			Server: &phases.ServerLevel{Available: true, PrefixCacheHitRate: f(0.333), SpecAcceptRate: f(0.595)}}),
	}, -1)
	v := plain(m)
	panetest.Fits(t, m.View(), 150, 30)
	for _, want := range []string{"pfx hit", "spec acc", "33%", "60%", "prefix hit 33%", "spec accept 60% (len 2.19)"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
}

// SGLang's server line names the engine and still fits the pane: a short
// line is not cut with "…".
func TestSGLangServerLineFits(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	m := newPane(t, 120, 30, true)
	replay(m, []phases.Event{
		phases.New(clock0, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 8, Requests: 16}),
		phases.New(clock0, phases.KindMacroServer, phases.ServerStats{Available: true, Engine: "sglang", Running: 8, KVCacheUsage: 0.3,
			CacheHitRate: f(0.25), GenTokS: 1532, IntervalS: 1}),
	}, -1)
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.HasPrefix(l, "server SGLang") {
			if components.Width(l) > 120 || strings.Contains(l, "…") || !strings.Contains(l, "gen 1,532 tok/s") {
				t.Fatalf("server line cut: %q", l)
			}
			return
		}
	}
	t.Fatalf("no SGLang server line:\n%s", plain(m))
}

// SGLang's levels table says "queued" and shows no preemptions (it counts
// none), as its server line does.
func TestSGLangTableColumns(t *testing.T) {
	m := newPane(t, 120, 30, true)
	replay(m, []phases.Event{
		phases.New(clock0, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 8, Requests: 16}),
		phases.New(clock0, phases.KindMacroServer, phases.ServerStats{Available: true, Engine: "sglang", Running: 8, IntervalS: 1}),
		phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Concurrency: 8, Completed: 16, OutputThroughput: 800,
			Server: &phases.ServerLevel{Available: true, MeanRunning: 8, GenerationTokS: 800}}),
	}, -1)
	v := plain(m)
	var row string
	for _, l := range strings.Split(v, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "8 ") {
			row = l
		}
	}
	if !strings.Contains(v, "queued KV max preempt") || !strings.Contains(row, "0%       —       800") {
		t.Fatalf("SGLang table: want \"queued\" and \"—\" for preemptions:\n%s", v)
	}
}

// At 80 columns a busy vLLM server's line keeps its prefix-cache hit rate
// (and the queue, KV cache and preemptions), taking short labels and
// leaving out the generation rate, which the tok/s chart shows as "srv";
// with room, every figure shows under its full label.
func TestVLLMServerLineKeepsPrefixHitAt80(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	stats := phases.ServerStats{Available: true, Running: 256, Waiting: 1024, KVCacheUsage: 0.97, Preemptions: 1234,
		CacheHitRate: f(0.45), GenTokS: 12345, IntervalS: 1}
	for _, tc := range []struct {
		w          int
		want, lack []string
	}{
		{80, []string{"run 256", "wait 1,024", "KV 97%", "preempt 1,234", "prefix hit 45%"}, []string{"…"}},
		{140, []string{"running 256", "waiting 1,024", "preemptions 1,234", "gen 12,345 tok/s", "prefix hit 45%"}, []string{"…"}},
	} {
		m := newPane(t, tc.w, 24, true)
		replay(m, []phases.Event{
			phases.New(clock0, phases.KindMacroLevelStarted, phases.LevelStarted{Concurrency: 256, Requests: 512}),
			phases.New(clock0, phases.KindMacroServer, stats),
		}, -1)
		var line string
		for _, l := range strings.Split(plain(m), "\n") {
			if strings.HasPrefix(l, "server ") {
				line = l
			}
		}
		if components.Width(line) > tc.w {
			t.Errorf("%d columns: server line %d wide: %q", tc.w, components.Width(line), line)
		}
		for _, s := range tc.want {
			if !strings.Contains(line, s) {
				t.Errorf("%d columns: server line lacks %q: %q", tc.w, s, line)
			}
		}
		for _, s := range tc.lack {
			if strings.Contains(line, s) {
				t.Errorf("%d columns: server line has %q: %q", tc.w, s, line)
			}
		}
	}
}

// A replayed trace's levels are named by their speed, and on a wide
// screen the reuse the trace's hash ids imply stands beside the server's
// prefix-cache hit rate.
func TestTraceReuseBesideHitRate(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	m := newPane(t, 160, 30, true)
	lv := func(speed, hit float64) phases.Event {
		return phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Rate: 3.5 * speed, Completed: 24, OutputThroughput: 800,
			Schedule: &phases.Schedule{Arrivals: "mooncake trace", TraceSpeed: speed, TraceReuse: f(0.836)},
			Server:   &phases.ServerLevel{Available: true, PrefixCacheHitRate: f(hit)}})
	}
	replay(m, []phases.Event{lv(2, 0.834), lv(4, 0.81)}, -1)
	v := plain(m)
	panetest.Fits(t, m.View(), 160, 30)
	for _, want := range []string{"implied", "2×", "4×", "83%", "84%", "81%"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
}

// On 80 and 120 columns, too narrow for the implied column, a line under
// the title sets the last replay's hit rate beside the reuse its trace
// implies; the SLO's summary names the fastest replay that met it.
func TestTraceReuseLineOnNarrowScreens(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		m := newPane(t, size[0], size[1], true)
		replay(m, []phases.Event{
			phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Rate: 7.054, Completed: 24, OutputThroughput: 228,
				Schedule: &phases.Schedule{Arrivals: "mooncake trace", TraceSpeed: 2, TraceReuse: f(0.836)},
				Server:   &phases.ServerLevel{Available: true, PrefixCacheHitRate: f(0.834)}}),
			phases.New(clock0, phases.KindMacroSLO, phases.SLOMet{Spec: "ttft=2s,tpot=50ms,e2el=30s", MaxSpeed: 2,
				Text: "largest replay speed meeting the SLO (ttft=2s,tpot=50ms,e2el=30s for 90% of requests): 2×"}),
		}, -1)
		panetest.Fits(t, m.View(), size[0], size[1])
		v := plain(m)
		slo := "largest replay speed meeting the SLO (ttft=2s,tpot=50ms,e2el=30s for 90% of requests): 2×"
		if size[0] == 80 {
			slo = "SLO met up to 2× (ttft=2s,tpot=50ms,e2el=30s)"
		}
		for _, want := range []string{"replay at 2×: prefix cache hit 83%, the trace implies 84%", slo} {
			if !strings.Contains(v, want) {
				t.Errorf("%dx%d: view lacks %q:\n%s", size[0], size[1], want, v)
			}
		}
		if got := m.sloShort(); got != "SLO met up to 2×" {
			t.Errorf("short SLO %q", got)
		}
	}
}

// A client-bound open-loop level is named by its rate, and only that
// level's row is flagged.
func TestClientBoundOpenLoopNamedByRate(t *testing.T) {
	m := newPane(t, 120, 40, true)
	lv := func(rate float64) phases.Event {
		return phases.New(clock0, phases.KindMacroLevel, phases.LevelResult{Rate: rate, Completed: 24, OutputThroughput: 228})
	}
	replay(m, []phases.Event{lv(3.527), lv(7.054),
		phases.New(clock0, phases.KindMacroClientBound, phases.ClientBound{Rate: 7.054, Reason: "p99 send lag 67.8 ms is over 10 ms"})}, -1)
	if v := plain(m); !strings.Contains(v, "CLIENT-BOUND at 7.054 req/s: p99 send lag") || strings.Contains(v, "C=0") {
		t.Errorf("view:\n%s", v)
	}
	m.SetSize(80, 24)
	if rows := strings.Join(m.table(4), "\n"); strings.Count(rows, "client-bound") != 1 {
		t.Errorf("rows:\n%s", rows)
	}
}
