package macro_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// A sweep with the sample Mooncake trace at 2× is one open-loop level
// sending the trace's 24 requests at its mean rate; the result records the
// reuse the trace implies beside the server's hit rate, within 3 points.
func TestSweepReplaysTrace(t *testing.T) {
	_, url := startEmu(t, vllmemu.Config{StepTime: time.Millisecond, CoarseTiming: true})
	res := runSweep(t, macro.Config{URL: url, Model: "test/model", Dataset: macro.TraceMooncake,
		DatasetFile: "testdata/trace_mooncake.jsonl", TraceSpeed: 2, NoPreflight: true, Seed: 1,
		Scraper: servermetrics.NewScraper(url+"/metrics", nil)})
	tr := res.Workload.Trace
	if tr == nil || tr.Requests != 24 || len(res.Levels) != 1 {
		t.Fatalf("trace %+v, %d levels", tr, len(res.Levels))
	}
	l := res.Levels[0]
	if l.Schedule == nil || l.Schedule.Requests != 24 || math.Abs(l.Schedule.ScheduledRate-tr.MeanRate) > 0.01*tr.MeanRate {
		t.Fatalf("schedule %+v, trace's mean rate %g", l.Schedule, tr.MeanRate)
	}
	if l.Schedule.TraceReuse == nil || *l.Schedule.TraceReuse != tr.ImpliedReuse {
		t.Fatalf("level's implied reuse %v, want %g", l.Schedule.TraceReuse, tr.ImpliedReuse)
	}
	if l.Server == nil || l.Server.PrefixCacheHitRate == nil {
		t.Fatalf("no server hit rate: %+v", l.Server)
	}
	if hit := *l.Server.PrefixCacheHitRate; math.Abs(hit-tr.ImpliedReuse) > 0.03 {
		t.Fatalf("server hit rate %.3f, trace implies %.3f", hit, tr.ImpliedReuse)
	}
	t.Logf("server hit rate %.3f, trace implies %.3f; scheduled %.3f req/s, achieved %.3f, p99 delay %.2f ms",
		*l.Server.PrefixCacheHitRate, tr.ImpliedReuse, l.Schedule.ScheduledRate, l.Schedule.AchievedRate, l.Schedule.P99DelayMs)
}

// A speed search replays the sample trace at speeds doubling from 2×
// against an emulator that runs one request at a time, 3 ms a step (about
// 9 req/s: at 4× its queue grows): it brackets the largest speed meeting
// ttft=500ms, each level replayed at the speed it names (its schedule's
// rate that many times the trace's own).
func TestSpeedSearchBracketsTrace(t *testing.T) {
	_, url := startEmu(t, vllmemu.Config{StepTime: 3 * time.Millisecond, CoarseTiming: true, MaxNumSeqs: 1})
	res := runSweep(t, macro.Config{URL: url, Model: "test/model", Dataset: macro.TraceMooncake,
		DatasetFile: "testdata/trace_mooncake.jsonl", TraceSpeed: 2, NoPreflight: true, Seed: 1,
		Search: "speed", SearchTolerance: 0.25, SLO: "ttft=500ms"})
	s := res.Search
	if s == nil || s.Unit != "speed" || s.Lower < 2 || s.Upper == nil || *s.Upper > 32 || *s.Upper-s.Lower > 0.25*s.Lower {
		t.Fatalf("search %+v", s)
	}
	base := res.Workload.Trace.MeanRate / res.Workload.Trace.Speed
	for _, l := range res.Levels {
		sc := l.Schedule
		if sc == nil || sc.TraceSpeed <= 0 || math.Abs(sc.ScheduledRate-base*sc.TraceSpeed) > 0.02*base*sc.TraceSpeed {
			t.Fatalf("level %+v: want the trace's %.3g req/s × its speed", sc, base)
		}
	}
	t.Logf("%s", s.Text)
}

// A server whose tokenizer counts the trace's long prompts at 30% more
// than the calibration's short prompt foretold gets a warning naming the
// counts; the emulator's own tokenizer, which counts them as the trace
// says, gets none.
func TestTraceTokensChecked(t *testing.T) {
	emu, plain := startEmu(t, vllmemu.Config{StepTime: time.Millisecond, CoarseTiming: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tokenize" {
			emu.ServeHTTP(w, r)
			return
		}
		var q struct{ Prompt string }
		_ = json.NewDecoder(r.Body).Decode(&q)
		n := len(strings.Fields(q.Prompt))
		if n > 512 {
			n = n * 13 / 10
		}
		fmt.Fprintf(w, `{"count":%d}`, n)
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		url  string
		warn bool
	}{{srv.URL, true}, {plain, false}} {
		res := runSweep(t, macro.Config{URL: c.url, Model: "test/model", Dataset: macro.TraceMooncake,
			DatasetFile: "testdata/trace_mooncake.jsonl", TraceSpeed: 50, NoPreflight: true, Seed: 1})
		warned := strings.Contains(strings.Join(res.Warnings, "\n"), "the server's /tokenize counts 4 of the trace's prompts at")
		if warned != c.warn {
			t.Errorf("%s: warned %v, want %v: %q", c.url, warned, c.warn, res.Warnings)
		}
	}
}
