package nccl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/remote/sim"
)

func readLines(t testing.TB, data []byte) *nccl.Result {
	r := &nccl.Result{}
	var a2a []phases.NCCLAllToAll
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l, ok := pyrun.ParseLine(sc.Text())
		if !ok {
			continue
		}
		kind, d, ok := nccl.LineEvent(l)
		if !ok {
			continue
		}
		ev := phases.New(time.Now(), kind, d)
		r.Add(ev)
		if x, ok := ev.Data.(phases.NCCLAllToAll); ok {
			a2a = append(a2a, x)
			if c, found := nccl.FindCliff(a2a); found && r.Cliff == nil {
				r.Add(phases.New(time.Now(), phases.KindNCCLCliff, c))
			}
		}
	}
	return r
}

func TestParseRealRuns(t *testing.T) {
	for _, c := range []struct {
		file  string
		nproc int
		graph bool
	}{
		{"testdata/nccl-kimi-k2.5-nproc1.lines.jsonl", 1, false},
		{"testdata/nccl-kimi-k2.5-nproc2.lines.jsonl", 2, true},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		r := readLines(t, b)
		if r.Env == nil || r.Env.NProc != c.nproc || r.Env.NCCLEnv["NCCL_NVLS_ENABLE"] != "0" {
			t.Fatalf("%s: env %+v", c.file, r.Env)
		}
		if len(r.Bursts) != 4 || len(r.AllToAll) != 9 || len(r.Errors) != 0 {
			t.Fatalf("%s: %d bursts, %d all-to-all, errors %v", c.file, len(r.Bursts), len(r.AllToAll), r.Errors)
		}
		for _, b := range r.Bursts {
			// 123 all-reduces of M × 7168 × 2 bytes; µs/op = total / count.
			if b.Count != 123 || b.Bytes != int64(b.M)*14336 || math.Abs(b.PerOpUs-b.TotalMs*1e3/123) > 1e-6 {
				t.Errorf("%s: burst %+v", c.file, b)
			}
			if (b.GraphMs > 0) != c.graph {
				t.Errorf("%s: graph timing %v, want %v", c.file, b.GraphMs, c.graph)
			}
		}
		for _, a := range r.AllToAll {
			// T × top-8 × 7168 × 2 bytes; busbw = algbw × (n−1)/n.
			n := float64(c.nproc)
			if a.Bytes != int64(a.Tokens)*114688 || math.Abs(a.BusBW-a.AlgBW*(n-1)/n) > 1e-9 {
				t.Errorf("%s: %+v", c.file, a)
			}
		}
		// Neither run has a latency cliff (NVLink, and one rank).
		if r.Cliff != nil {
			t.Errorf("%s: cliff %+v", c.file, r.Cliff)
		}
		var out bytes.Buffer
		r.WriteTables(&out)
		if !strings.Contains(out.String(), "no latency cliff") || !strings.Contains(out.String(), "1.75 MiB") {
			t.Errorf("%s tables:\n%s", c.file, out.String())
		}
	}
	// The committed --json report of the same run decodes to the same tables.
	b, err := os.ReadFile("testdata/nccl-kimi-k2.5-nproc2.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep nccl.Report
	if err := json.Unmarshal(b, &rep); err != nil || rep.NProc != 2 || len(rep.Bursts) != 4 || rep.Plan.AllReduce.PerStep != 123 {
		t.Errorf("report: %v %+v", err, rep.Result)
	}
}

func TestFindCliff(t *testing.T) {
	rows := func(us ...float64) []phases.NCCLAllToAll {
		var r []phases.NCCLAllToAll
		for i, u := range us {
			r = append(r, phases.NCCLAllToAll{Tokens: 1 << i, Us: u})
		}
		return r
	}
	// 30 → 31 → 32 → 33 → 70: 70 > 2 × 33, so the cliff is at T = 16.
	c, ok := nccl.FindCliff(rows(30, 31, 32, 33, 70, 150))
	if !ok || c.Tokens != 16 || c.FromUs != 33 || c.ToUs != 70 {
		t.Errorf("%+v %v", c, ok)
	}
	// Exactly 2× is not a cliff ("more than 2×").
	if _, ok := nccl.FindCliff(rows(30, 60, 120)); ok {
		t.Error("2× counted as a cliff")
	}
	if _, ok := nccl.FindCliff(rows(30)); ok {
		t.Error("one row")
	}
	if _, ok := nccl.FindCliff(rows(0, 50)); ok {
		t.Error("zero latency row")
	}
}

func TestRunOnSim(t *testing.T) {
	ctx, d := pyruntest.StartSim(t, sim.Options{})
	r, err := runResult(ctx, nccl.Complete(nccl.Config{Host: d, Torchrun: "docker exec -i vllm torchrun", NProc: 8, Plan: pyruntest.KimiPlan(t, 1, 8, 64, 128)}))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Bursts) != 4 || len(r.AllToAll) != 9 || r.Env == nil || r.Env.NProc != 8 {
		t.Fatalf("%+v", r)
	}
	// The simulated TP8 burst at M=1 is about half of a 12.5 ms TPOT.
	if ms := r.Bursts[0].TotalMs; ms < 5 || ms > 7.5 {
		t.Errorf("M=1 burst %.2f ms", ms)
	}
	if r.Cliff == nil || r.Cliff.Tokens != 16 {
		t.Errorf("cliff %+v", r.Cliff)
	}
	// The simulator does not model the burst between GEMMs, and says so.
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "between GEMMs: not simulated") || r.Bursts[0].InStepMs != 0 {
		t.Errorf("warnings %q", r.Warnings)
	}
	// With --no-graph it says what the script says, once.
	r, err = runResult(ctx, nccl.Complete(nccl.Config{Host: d, Torchrun: "torchrun", NProc: 8, NoGraph: true, Plan: pyruntest.KimiPlan(t, 1, 8)}))
	if err != nil || len(r.Bursts) != 2 || r.Bursts[0].GraphMs != 0 || strings.Join(r.Warnings, "\n") != noGraphWarning {
		t.Errorf("--no-graph: %v, bursts %+v, warnings %q", err, r.Bursts, r.Warnings)
	}
}

// One GPU: a TP 1 plan and one process have no collectives. The run says
// so, runs nothing on the host and finishes done (no error).
func TestRunOneGPU(t *testing.T) {
	ctx, d := pyruntest.StartSim(t, sim.Options{GPUs: 1})
	c, _ := model.Preset("kimi-k2.5")
	p, err := model.Build(c, model.Options{TP: 1, Batch: []int{1, 8}})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan phases.Event, 64)
	err = nccl.Run(ctx, nccl.Complete(nccl.Config{Host: d, NProc: 1, Plan: p}), &phases.Emitter{Out: ch})
	close(ch)
	if err != nil {
		t.Fatal(err)
	}
	r := &nccl.Result{}
	var finished *phases.PhaseFinished
	for ev := range ch {
		r.Add(ev)
		if f, ok := ev.Data.(phases.PhaseFinished); ok {
			finished = &f
		}
	}
	if r.None == nil || r.None.TP != 1 || !strings.Contains(r.None.Reason, "0 ms per step") || len(r.Bursts) != 0 {
		t.Fatalf("result %+v", r)
	}
	if finished == nil || finished.Outcome != phases.OutcomeDone {
		t.Fatalf("finished %+v", finished)
	}
	var out bytes.Buffer
	r.WriteTables(&out)
	if !strings.Contains(out.String(), "No collectives: one process on one GPU (TP 1)") {
		t.Errorf("tables: %s", out.String())
	}
}

func TestRunOnSimTooManyRanks(t *testing.T) {
	ctx, d := pyruntest.StartSim(t, sim.Options{GPUs: 2})
	_, err := runResult(ctx, nccl.Complete(nccl.Config{Host: d, NProc: 8, Plan: pyruntest.KimiPlan(t, 1, 8, 64, 128)}))
	if err == nil || !strings.Contains(err.Error(), "invalid device ordinal") {
		t.Fatalf("error %v", err)
	}
}

func TestCommand(t *testing.T) {
	c := nccl.Command(nccl.Complete(nccl.Config{Torchrun: "torchrun", NProc: 8, Plan: pyruntest.KimiPlan(t, 1, 8, 64, 128), Tokens: []int{1, 16}}), "/tmp/profdeck/s.py")
	want := `torchrun --standalone --nproc-per-node 8 --no-python python3 -c "$(cat /tmp/profdeck/s.py)" --hidden 7168 --count 123 --batch 1,8,64,128 --a2a-bytes-per-token 114688 --tokens 1,16`
	if c != want {
		t.Errorf("\n got %s\nwant %s", c, want)
	}
}

func FuzzLineEvent(f *testing.F) {
	b, _ := os.ReadFile("testdata/nccl-kimi-k2.5-nproc2.lines.jsonl")
	for _, l := range strings.Split(string(b), "\n") {
		f.Add(l)
	}
	f.Add(`{"type":"alltoall","tokens_per_gpu":"x"}`)
	f.Add(`{"type":"burst","m":1e400}`)
	f.Fuzz(func(t *testing.T, s string) {
		r := readLines(t, []byte(s))
		var out bytes.Buffer
		r.WriteTables(&out)
	})
}

// runResult runs cfg and gathers every event it emits into a Result.
func runResult(ctx context.Context, cfg nccl.Config) (*nccl.Result, error) {
	ch := make(chan phases.Event, 256)
	r := &nccl.Result{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			r.Add(ev)
		}
	}()
	err := nccl.Run(ctx, cfg, &phases.Emitter{Out: ch})
	close(ch)
	<-done
	return r, err
}
