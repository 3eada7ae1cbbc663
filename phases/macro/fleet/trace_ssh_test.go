package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

const traceFile = "../testdata/trace_mooncake.jsonl"

// traceOffsets are the trace's arrivals in seconds after its first, at speed.
func traceOffsets(t *testing.T, speed float64) []float64 {
	b, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var row struct{ Timestamp float64 }
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		out = append(out, row.Timestamp/1e3/speed)
	}
	for i := len(out) - 1; i >= 0; i-- {
		out[i] -= out[0]
	}
	return out
}

// A trace replayed by a sweep over two agents, each behind its own sshd:
// the file reaches both hosts, every row of the trace is sent once, the
// sends of both agents together keep the trace's own schedule (to 30 ms),
// and the merged level's schedule counts them all at the trace's rate. A
// replay whose sends miss the schedule runs once more (emutest.Timed), as
// the timing tests do: on a busy machine one run's send can slip past
// 30 ms (a send lag the level reports); a client that keeps the wrong
// schedule misses both.
func TestTraceOverSSHAgents(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: time.Millisecond, StepPerSeq: 1})
	ms, caches := members(t, 2)
	const speed = 2
	cfg := levelConfig(url, 0)
	cfg.NoPreflight, cfg.Dataset, cfg.DatasetFile, cfg.TraceSpeed = true, "mooncake", traceFile, speed
	cfg.Arrivals, cfg.Burstiness = macro.ArrivalsPoisson, 1
	want := traceOffsets(t, speed)
	emutest.Timed(t, func() []string { return replayOverAgents(t, cfg, ms, caches, want) })
}

// replayOverAgents runs cfg's trace over the agents ms, checks what every
// run must hold (each row sent once, the schedule's figures), and returns
// the rows sent more than 30 ms off the trace's schedule.
func replayOverAgents(t *testing.T, cfg macro.Config, ms []Member, caches []string, want []float64) (late []string) {
	t.Helper()
	buf := newLockedBuf()
	cfg.JSONL = buf
	e, err := NewEngine(cfg, ms)
	if err != nil {
		t.Fatal(err)
	}
	rate := e.Config().Rate
	res, err := e.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caches {
		noAgentLeft(t, c)
	}
	recs := finished(t, &buf.b)
	if len(res.Levels) != 1 || len(recs) != len(want) {
		t.Fatalf("%d levels, %d requests finished; the trace has %d rows", len(res.Levels), len(recs), len(want))
	}
	lv := res.Levels[0]
	sc := lv.Schedule
	if lv.Completed != len(want) || lv.Agents[0].Completed != len(want)/2 || sc == nil || sc.Requests != len(want) || sc.TraceSpeed != cfg.TraceSpeed ||
		math.Abs(sc.ScheduledRate-rate) > 0.1*rate || math.Abs(sc.AchievedRate-rate) > 0.1*rate {
		t.Fatalf("completed %d (first agent %d), schedule %+v; the trace's %d rows at %.2f req/s", lv.Completed, lv.Agents[0].Completed, sc, len(want), rate)
	}
	var sent []float64
	for _, r := range recs {
		sent = append(sent, r.SentS)
	}
	slices.Sort(sent)
	worst := 0.0
	for i := range sent {
		d := math.Abs(sent[i] - sent[0] - want[i])
		worst = max(worst, d)
		if d > 0.03 {
			late = append(late, fmt.Sprintf("row %d sent %.3f s after the first, the trace's %.3f s", i, sent[i]-sent[0], want[i]))
		}
	}
	t.Logf("%d rows over 2 agents at %.2f req/s (scheduled %.2f, achieved %.2f); sends within %.1f ms of the trace's schedule", len(recs), rate, sc.ScheduledRate, sc.AchievedRate, 1e3*worst)
	return late
}
