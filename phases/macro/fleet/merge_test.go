package fleet

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/hdrsec"
)

// exact is the q-quantile of xs in ms: the value of rank round(q·n), the
// rank rule HDR histograms use.
func exact(xs []int64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return float64(s[max(i, 0)]) / 1e3
}

// agentsOf deals samples (µs, long-tailed) to n agents as the wire carries them.
func agentsOf(t *testing.T, xs []int64, n int) []AgentLevel {
	t.Helper()
	recs := make([]*Recorder, n)
	for i := range recs {
		recs[i] = NewRecorder()
	}
	for i, x := range xs {
		recs[i%n].Record("ttft", int64(1000+i/500), x) // seconds 1000..
	}
	out := make([]AgentLevel, n)
	for i, r := range recs {
		secs, err := r.Seconds()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(secs) // through JSON, as the agent's lines go
		if err != nil {
			t.Fatal(err)
		}
		var back []Second
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		out[i] = AgentLevel{Host: "gen" + string(rune('a'+i)), Seconds: back, OK: int64(len(xs) / n)}
	}
	return out
}

func samples(n int, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 1))
	xs := make([]int64, n)
	for i := range xs {
		xs[i] = int64(math.Exp(r.NormFloat64()*0.8+math.Log(40_000))) + 1 // ~40 ms median, long tail
	}
	return xs
}

func TestMergedPercentilesAreThoseOfAllRequests(t *testing.T) {
	xs := samples(20_000, 7)
	for _, n := range []int{1, 2, 4} {
		lv, err := Merge(agentsOf(t, xs, n))
		if err != nil {
			t.Fatal(err)
		}
		q := lv.Metrics["ttft"]
		if q.Count != int64(len(xs)) {
			t.Fatalf("%d agents: merged %d values, want %d", n, q.Count, len(xs))
		}
		for _, c := range []struct {
			q   float64
			got float64
		}{{0.5, q.P50}, {0.9, q.P90}, {0.99, q.P99}} {
			want := exact(xs, c.q)
			if rel := math.Abs(c.got-want) / want; rel > 0.01 {
				t.Errorf("%d agents: p%.0f = %.3f ms, exact %.3f ms (%.2f%% off)", n, 100*c.q, c.got, want, 100*rel)
			}
		}
	}
}

// Averaging the agents' own p99s is what the merge must not do: with one
// slow agent the average is far from the p99 of all requests.
func TestMergeIsNotAnAverageOfPercentiles(t *testing.T) {
	fast, slow := samples(10_000, 1), samples(10_000, 2)
	for i := range slow {
		slow[i] *= 5
	}
	a, b := NewRecorder(), NewRecorder()
	for i := range fast {
		a.Record("e2el", 1, fast[i])
		b.Record("e2el", 1, slow[i])
	}
	sa, _ := a.Seconds()
	sb, _ := b.Seconds()
	lv, err := Merge([]AgentLevel{{Host: "a", Seconds: sa}, {Host: "b", Seconds: sb}})
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(fast), slow...)
	want := exact(all, 0.99)
	avg := (exact(fast, 0.99) + exact(slow, 0.99)) / 2
	got := lv.Metrics["e2el"].P99
	if math.Abs(got-want)/want > 0.01 || math.Abs(avg-want)/want < 0.05 {
		t.Fatalf("p99 merged %.2f, all %.2f, average of agents' %.2f", got, want, avg)
	}
}

func TestLostAgentKeepsItsRequestsAndMarksPartial(t *testing.T) {
	xs := samples(4_000, 3)
	agents := agentsOf(t, xs, 2)
	agents[1].Seconds = agents[1].Seconds[:len(agents[1].Seconds)/2] // it sent half, then its connection closed
	agents[1].Lost = "connection closed"
	agents[0].Audit = Audit{ClientBound: true, Reason: "client used 97% of 2 cores"}
	lv, err := Merge(agents)
	if err != nil {
		t.Fatal(err)
	}
	kept := int64(0)
	for _, s := range agents[1].Seconds {
		kept += s.Count
	}
	if got := lv.Metrics["ttft"].Count; got != int64(len(xs)/2)+kept || kept == 0 {
		t.Fatalf("merged %d values, want agent a's %d and lost agent's %d", got, len(xs)/2, kept)
	}
	note := lv.Note()
	if !lv.Partial || !strings.Contains(note, "partial: lost genb#1: connection closed") ||
		!strings.Contains(note, "load agent was the bottleneck: gena#0: client used 97%") {
		t.Fatalf("note %q", note)
	}
}

func TestMergeRefusesACountThatDisagrees(t *testing.T) {
	r := NewRecorder()
	r.Record("ttft", 1, 500)
	s, _ := r.Seconds()
	s[0].Count = 2
	if _, err := Merge([]AgentLevel{{Host: "x", Seconds: s}}); err == nil || !strings.Contains(err.Error(), "1 values, said 2") {
		t.Fatalf("err %v", err)
	}
	s[0].HDR = []byte("not a histogram")
	if _, err := Merge([]AgentLevel{{Host: "x", Seconds: s}}); err == nil {
		t.Fatal("a broken histogram merged")
	}
}

// A batch whose histogram holds other than the count sent beside it is
// refused at the merge, naming the agent that sent it.
func TestBatchWithWrongCountNamesTheAgent(t *testing.T) {
	r := NewRecorder()
	r.Record("ttft", 0, 1500)
	secs, err := r.Seconds()
	if err != nil {
		t.Fatal(err)
	}
	good, bad := &sink{}, &sink{}
	good.batch(hdrsec.Batch{Seconds: secs, OK: 1})
	secs[0].Count = 3
	bad.batch(hdrsec.Batch{Seconds: secs, OK: 1})
	var agents []AgentLevel
	for i, s := range []*sink{good, bad} {
		agents = append(agents, AgentLevel{Host: "gen" + string(rune('1'+i)), Seconds: s.seconds, OK: s.b.OK})
	}
	if _, err := Merge(agents); err == nil || !strings.Contains(err.Error(), "agent gen2#1") || !strings.Contains(err.Error(), "1 values, said 3") {
		t.Fatalf("merge: %v: want the refusal naming gen2#1", err)
	}
}

// A metric the agents measured but sent no histogram of keeps the largest
// agent's percentiles, and the level's warnings say so; those sent are
// merged, the asked-for extra percentiles too.
func TestUnmergedMetricIsWarned(t *testing.T) {
	xs := samples(2_000, 5)
	agents := agentsOf(t, xs, 2)
	for i, itl := range []float64{4, 6} {
		agents[i].Level = &phases.LevelResult{Completed: 1000, MedianITLms: itl, P90ITLms: itl + 1, P99ITLms: itl + 2}
	}
	lv, err := Merge(agents)
	if err != nil {
		t.Fatal(err)
	}
	lv.Pcts = macro.Percentiles{Metrics: []string{"ttft"}, Of: []float64{95}}
	lr := lv.LevelResult(8, 0)
	want := "ITL percentiles are the largest load agent's, not merged: no agent sent their histograms"
	if lr.MedianITLms != 6 || lr.P99ITLms != 8 || !slices.Contains(lr.Warnings, want) || len(lr.Warnings) != 1 {
		t.Fatalf("ITL p50 %v p99 %v, warnings %q", lr.MedianITLms, lr.P99ITLms, lr.Warnings)
	}
	if got, w := lr.Percentiles["p95_ttft_ms"], exact(xs, 0.95); math.Abs(got-w) > 0.01*w || math.Abs(lr.MedianTTFTms-exact(xs, 0.5)) > 0.01*exact(xs, 0.5) {
		t.Fatalf("p95 TTFT %v (all %v), p50 %v", got, w, lr.MedianTTFTms)
	}
}

// The agents' own level notes and warnings reach the merged level: one
// every agent says once, any other under the name of the agent that said it.
func TestAgentNotesCarried(t *testing.T) {
	agents := agentsOf(t, samples(2_000, 5), 2)
	same, held := "few requests", "open loop held at 64 in flight"
	agents[0].Level = &phases.LevelResult{Completed: 1000, Notes: []string{same, held}, Warnings: []string{"client-bound"}}
	agents[1].Level = &phases.LevelResult{Completed: 1000, Notes: []string{same}}
	lv, err := Merge(agents)
	if err != nil {
		t.Fatal(err)
	}
	lr := lv.LevelResult(8, 0)
	name := agentName(agents[0].Host, 0)
	if !slices.Contains(lr.Notes, same) || !slices.Contains(lr.Notes, name+": "+held) || slices.Contains(lr.Notes, held) ||
		!slices.Contains(lr.Warnings, name+": client-bound") {
		t.Fatalf("notes %q, warnings %q", lr.Notes, lr.Warnings)
	}
	n := 0
	for _, s := range lr.Notes {
		if strings.Contains(s, same) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("notes %q: %q %d times, want once", lr.Notes, same, n)
	}
}

// An agent's few-requests warning counts its own share: the merged level
// says its own, of all agents' requests, and the result names the sweep's
// levels, not the agents' shares.
func TestAgentFewWarningIsTheLevels(t *testing.T) {
	agents := agentsOf(t, samples(8, 5), 2)
	for i := range agents {
		agents[i].OK = 4
		agents[i].Level = &phases.LevelResult{Completed: 4, Warnings: []string{macro.FewRequestsWarning(4)}}
	}
	lv, err := Merge(agents)
	if err != nil {
		t.Fatal(err)
	}
	lr := lv.LevelResult(2, 0)
	if want := []string{macro.FewRequestsWarning(lr.Completed)}; lr.Completed >= phases.MinRequests || !slices.Equal(lr.Warnings, want) {
		t.Fatalf("%d completed, warnings %q, want %q", lr.Completed, lr.Warnings, want)
	}
	agentRes := []string{"the server's /tokenize is missing", "C=1: " + macro.FewRequestsWarning(4), "C=1, C=2: x", "4 req/s: y"}
	if got := sweepWarnings(agentRes); !slices.Equal(got, agentRes[:1]) {
		t.Errorf("an agent's sweep warnings %q", got)
	}
	if got := levelWarnings([]phases.LevelResult{lr}); len(got) != 1 || !strings.HasPrefix(got[0], "C=2: only ") {
		t.Errorf("the result's level warnings %q", got)
	}
}

// The server is one, whichever agent read its /metrics: the merged level
// has the first agent's server figures that read it and says whose; all
// agents' tokens over their windows stand beside the server's (990 against
// 1,000: within 2%), not compared while an agent has no such window.
func TestMergedLevelHasTheServer(t *testing.T) {
	agents := agentsOf(t, samples(2_000, 5), 2)
	agents[0].Level = &phases.LevelResult{Completed: 1000, Server: &phases.ServerLevel{Note: "unreachable"}}
	agents[1].Level = &phases.LevelResult{Completed: 1000, Server: &phases.ServerLevel{Available: true, MaxRunning: 8, WindowS: 2,
		WindowGenerationTokens: 1000, WindowClientTokens: 500, TokenAgreement: "the server generated twice what this client counted"}}
	lv, err := Merge(agents)
	if err != nil {
		t.Fatal(err)
	}
	lr := lv.LevelResult(8, 0)
	sl := lr.Server
	if sl == nil || !sl.Available || sl.MaxRunning != 8 || sl.WindowClientTokens != 0 || !strings.HasPrefix(sl.TokenAgreement, "not compared") {
		t.Fatalf("one agent without the server's window: %+v", sl)
	}
	agents[0].Level.Server = &phases.ServerLevel{Available: true, WindowS: 2, WindowGenerationTokens: 1000, WindowClientTokens: 490}
	if sl := lv.LevelResult(8, 0).Server; sl.WindowClientTokens != 990 || !sl.TokensAgree || sl.TokenAgreement != "" {
		t.Fatalf("both agents' windows: %+v", sl)
	}
	want := "the server's figures are from load agent " + agentName(agents[1].Host, 1) + "'s reads of its /metrics"
	if !slices.Contains(lr.Notes, want) {
		t.Errorf("notes %q, want %q", lr.Notes, want)
	}
}
