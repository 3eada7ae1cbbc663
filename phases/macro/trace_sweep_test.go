package macro_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
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

// A window of the sample trace (1 s to 4 s: its first request at 1.175 s)
// replayed at 2× by a sweep: each request is scheduled at its time in the
// trace, from the window's first request, over the speed, and sent within
// 1% of the replay's span or the scheduling delay the level says; the
// level's rate is the window's mean rate, and each prompt has the trace's
// input length.
func TestSweepReplaysTraceWindowOnItsTimes(t *testing.T) {
	tr, err := macro.ReadTrace(macro.TraceMooncake, "testdata/trace_mooncake.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var want []macro.TraceRequest
	for _, r := range tr.Requests {
		if r.At >= time.Second && r.At < 4*time.Second {
			want = append(want, r)
		}
	}
	_, url := startEmu(t, vllmemu.Config{StepTime: time.Millisecond, CoarseTiming: true})
	var jl bytes.Buffer
	res := runSweep(t, macro.Config{URL: url, Model: "test/model", Dataset: macro.TraceMooncake,
		DatasetFile: "testdata/trace_mooncake.jsonl", TraceSpeed: 2, TraceStart: time.Second, TraceDuration: 3 * time.Second,
		NoPreflight: true, Seed: 1, JSONL: &jl})
	var recs []macro.Record
	for _, line := range strings.Split(strings.TrimSpace(jl.String()), "\n") {
		var r macro.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ScheduledS < recs[j].ScheduledS })
	if len(recs) != len(want) || len(want) < 5 {
		t.Fatalf("%d requests sent, the window holds %d", len(recs), len(want))
	}
	sc, sum := res.Levels[0].Schedule, res.Workload.Trace
	span := (want[len(want)-1].At - want[0].At).Seconds() / 2
	tol := max(0.01*span, sc.MaxDelayMs/1000+0.001)
	for i, r := range recs {
		due := (want[i].At - want[0].At).Seconds() / 2
		if d := r.ScheduledS - recs[0].ScheduledS - due; math.Abs(d) > 1e-6 {
			t.Errorf("request %d scheduled at +%.4fs, due +%.4fs", i, r.ScheduledS-recs[0].ScheduledS, due)
		}
		if d := r.SentS - recs[0].ScheduledS - due; d < -0.001 || d > tol {
			t.Errorf("request %d sent at +%.4fs, due +%.4fs (tolerance %.4fs)", i, r.SentS-recs[0].ScheduledS, due, tol)
		}
		if r.InputTokens != want[i].InputLen {
			t.Errorf("request %d: %d input tokens, the trace says %d", i, r.InputTokens, want[i].InputLen)
		}
	}
	if math.Abs(sum.SpanSeconds-span) > 1e-6 || math.Abs(sc.ScheduledRate-sum.MeanRate) > 0.01*sum.MeanRate ||
		math.Abs(sc.RequestedRate-sum.MeanRate) > 0.001*sum.MeanRate {
		t.Fatalf("window span %gs (want %gs), mean rate %g; level scheduled %g, requested %g", sum.SpanSeconds, span, sum.MeanRate,
			sc.ScheduledRate, sc.RequestedRate)
	}
	t.Logf("%d requests over %.3fs: scheduled %.3f req/s, achieved %.3f; delay p99 %.2f ms, max %.2f ms",
		len(recs), span, sc.ScheduledRate, sc.AchievedRate, sc.P99DelayMs, sc.MaxDelayMs)
}

// A speed search replays the sample trace at speeds doubling from 3×
// against an emulator that runs one request at a time, 2 ms a step (about
// 14 req/s: at 6× its queue grows): it brackets the largest speed meeting
// ttft=333ms, each level replayed at the speed it names (its schedule's
// rate that many times the trace's own). The seven replays of its 6.5 s
// span take 13 s (20 s at 3 ms a step from 2×, the same search scaled).
func TestSpeedSearchBracketsTrace(t *testing.T) {
	_, url := startEmu(t, vllmemu.Config{StepTime: 2 * time.Millisecond, CoarseTiming: true, MaxNumSeqs: 1})
	res := runSweep(t, macro.Config{URL: url, Model: "test/model", Dataset: macro.TraceMooncake,
		DatasetFile: "testdata/trace_mooncake.jsonl", TraceSpeed: 3, NoPreflight: true, Seed: 1,
		Search: "speed", SearchTolerance: 0.25, SLO: "ttft=333ms"})
	s := res.Search
	if s == nil || s.Unit != "speed" || s.Lower < 3 || s.Upper == nil || *s.Upper > 32 || *s.Upper-s.Lower > 0.25*s.Lower {
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
