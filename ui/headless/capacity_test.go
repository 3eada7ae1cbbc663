package headless_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/ui/headless"
)

// A sweep against a loopback server whose TPOT grows by 1 ms per running
// request over a 4 ms step (TPOT(C) ≈ 4 + C ms) meets tpot=12ms up to
// about C=8, between the levels C=4 and C=16: the capacity command finds
// that point, and its replicas are the rate over that point's throughput
// less the headroom.
func TestCapacityFromLoopbackSweep(t *testing.T) {
	t.Parallel()
	_, url := startEmu(t, vllmemu.Config{StepTime: 4 * time.Millisecond, StepPerSeq: time.Millisecond, PrefillPerToken: 1,
		MaxNumSeqs: 1024, Seed: 2})
	dir := t.TempDir()
	sw := filepath.Join(dir, "sweep.json")
	camp := filepath.Join(dir, "c.yaml")
	os.WriteFile(camp, []byte("host: local\nmodel:\n  tp: 4\nserver:\n  launch: vllm serve m --tensor-parallel-size 2 --pipeline-parallel-size 2\n"), 0o644)
	code, _, errs := sweepCLI(t, "-c", camp, "--url", url, "--concurrency", "1,4,16", "--requests", "32", "--warmup", "2",
		"--input-len", "16", "--output-len", "24", "--json", sw, "--seed", "1", "--metrics-url", "off")
	if code != 0 {
		t.Fatalf("sweep exit %d: %s", code, errs)
	}
	code, out, errs := runCLI(t, headless.CapacityMain, sw, "--rate", "100", "--slo", "tpot=12ms", "--json", "-")
	if code != 0 {
		t.Fatalf("capacity exit %d: %s", code, errs)
	}
	var p struct {
		Replicas, GPUs *int
		Deployment     struct{ TP, PP, GPUs int }
		Curve          struct{ Interpolated bool }
		Warnings       []string
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var raw struct {
		Replica struct {
			Load               float64 `json:"load"`
			RequestRate        float64 `json:"request_rate"`
			PlannedRequestRate float64 `json:"planned_request_rate"`
		}
	}
	json.Unmarshal([]byte(out), &raw)
	r := raw.Replica
	if r.Load < 6 || r.Load > 11 || !p.Curve.Interpolated {
		t.Fatalf("SLO point C=%.2f, want about 8 (interpolated %v); stderr %s\n%s", r.Load, p.Curve.Interpolated, errs, out)
	}
	want := int(math.Ceil(100 / (0.8 * r.RequestRate)))
	if p.Replicas == nil || *p.Replicas != want || math.Abs(r.PlannedRequestRate-0.8*r.RequestRate) > 1e-9 {
		t.Fatalf("replicas %v, want %d from %.3f req/s", p.Replicas, want, r.RequestRate)
	}
	// TP 2 × PP 2 from the launch command, over model.tp.
	if p.Deployment.TP != 2 || p.Deployment.PP != 2 || p.Deployment.GPUs != 4 || *p.GPUs != 4*want {
		t.Fatalf("deployment %+v gpus %v", p.Deployment, p.GPUs)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "interpolated: the SLO point") {
		t.Errorf("warnings %v", p.Warnings)
	}
	// The human text goes to stdout without --json -.
	code, out, _ = runCLI(t, headless.CapacityMain, sw, "--users", "500", "--think-time", "20s", "--slo", "tpot=12ms")
	if code != 0 || !strings.Contains(out, "Little's law: concurrency = users × E2E / (E2E + think) = 500 ×") || !strings.Contains(out, "MISSED") {
		t.Errorf("users: exit %d\n%s", code, out)
	}
	// An SLO the lightest level misses: no answer, exit 1, the document still written.
	doc := filepath.Join(dir, "plan.json")
	code, _, errs = runCLI(t, headless.CapacityMain, sw, "--rate", "1", "--slo", "tpot=1ms", "--json", doc)
	if code != headless.ExitCannotRun || !strings.Contains(errs, "no measured level met the SLO") {
		t.Errorf("tpot=1ms: exit %d, %s", code, errs)
	}
	if b, err := os.ReadFile(doc); err != nil || !strings.Contains(string(b), `"replicas": null`) {
		t.Errorf("plan document: %v %s", err, b)
	}
	// The campaign's capacity section gives the traffic; a flag wins.
	os.WriteFile(camp, []byte("capacity:\n  rate: 50\n  slo: tpot=12ms\n  headroom: 0\n"), 0o644)
	code, out, errs = runCLI(t, headless.CapacityMain, sw, "-c", camp)
	if code != 0 || !strings.Contains(out, "50 req/s within tpot=12ms (90% of requests) with 0% headroom") {
		t.Errorf("campaign: exit %d %s %s", code, out, errs)
	}
	code, out, _ = runCLI(t, headless.CapacityMain, sw, "-c", camp, "--headroom", "0.5")
	if code != 0 || !strings.Contains(out, "with 50% headroom") {
		t.Errorf("--headroom over the campaign: exit %d %s", code, out)
	}
}

// Bad input: one line naming it, exit 2.
func TestCapacityBadInput(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.json")
	os.WriteFile(sw, []byte(`{"levels":[{"concurrency":1,"completed":20,"request_throughput":1,"p90_tpot_ms":10,"mean_e2el_ms":1000}]}`), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("capacity:\n  headroom: 1.5\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{sw}, "no traffic"},
		{[]string{sw, "--rate", "1", "--users", "3"}, "not both"},
		{[]string{sw, "--rate", "-2", "--slo", "tpot=1s"}, "--rate"},
		{[]string{sw, "--rate", "2"}, "no SLO"},
		{[]string{sw, "--rate", "2", "--slo", "tpot=soon"}, "--slo"},
		{[]string{sw, "--rate", "2", "--slo", "tpot=1s", "--headroom", "1"}, "--headroom"},
		{[]string{sw, "--rate", "2", "--think-time", "3s", "--slo", "tpot=1s"}, "think"},
		{[]string{filepath.Join(dir, "absent.json"), "--rate", "1", "--slo", "tpot=1s"}, "absent.json"},
		{[]string{sw, "-c", bad, "--rate", "1", "--slo", "tpot=1s"}, "capacity.headroom"},
		{[]string{sw, "--rate", "1", "--slo", "tpot=1s", "--json", sw}, "--json"},
		{[]string{"--rate", "1"}, "need a FILE"},
	} {
		code, _, errs := runCLI(t, headless.CapacityMain, c.args...)
		if code != headless.ExitBadInput || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, %q (want %q in one line)", c.args, code, errs, c.want)
		}
	}
}

// compare over three sweeps (two loopback servers, one with a slower
// step): each against the first, the Pareto front of tokens/s per user
// against per GPU, and -o's markdown with the chart as SVG and PNG beside
// it.
func TestComparePareto(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var files []string
	for i, step := range []time.Duration{2 * time.Millisecond, 6 * time.Millisecond} {
		_, url := startEmu(t, vllmemu.Config{StepTime: step, StepPerSeq: 200 * time.Microsecond, PrefillPerToken: 1, Seed: int64(i + 1)})
		camp := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
		os.WriteFile(camp, []byte(fmt.Sprintf("host: local\nmodel:\n  tp: %d\n", 4*(i+1))), 0o644)
		f := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		code, _, errs := sweepCLI(t, "-c", camp, "--url", url, "--concurrency", "1,4", "--requests", "12", "--warmup", "1",
			"--input-len", "16", "--output-len", "12", "--json", f, "--seed", "1", "--metrics-url", "off")
		if code != 0 {
			t.Fatalf("sweep %d: exit %d %s", i, code, errs)
		}
		files = append(files, f)
	}
	md := filepath.Join(dir, "cmp.md")
	args := append(append([]string{}, files[0], files[1], files[0]), "-o", md, "--json", "-")
	code, out, errs := runCLI(t, headless.CompareMain, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		More   []json.RawMessage
		Pareto struct {
			Points []struct {
				Sweep       string
				GPUs        int
				TokSPerUser float64 `json:"tok_s_per_user"`
				OnFront     bool    `json:"on_front"`
			}
			Front []json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.More) != 1 || len(doc.Pareto.Points) != 6 || len(doc.Pareto.Front) == 0 {
		t.Fatalf("more %d points %d front %d", len(doc.More), len(doc.Pareto.Points), len(doc.Pareto.Front))
	}
	for _, p := range doc.Pareto.Points {
		if want := map[string]int{"A": 4, "B": 8, "C": 4}[p.Sweep]; p.GPUs != want {
			t.Errorf("sweep %s: %d GPUs, want %d (its campaign's model.tp)", p.Sweep, p.GPUs, want)
		}
	}
	if !strings.Contains(errs, "Pareto front, tokens/s per user against tokens/s per GPU") {
		t.Errorf("stderr lacks the front:\n%s", errs)
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "## Pareto front") || !strings.Contains(string(b), "cmp.charts/pareto.svg") {
		t.Fatalf("markdown: %v\n%s", err, b)
	}
	for _, name := range []string{"pareto.svg", "pareto.png"} {
		if st, err := os.Stat(filepath.Join(dir, "cmp.charts", name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	// -o may not be an input.
	if code, _, errs := runCLI(t, headless.CompareMain, files[0], files[1], "-o", files[0]); code != headless.ExitBadInput {
		t.Errorf("-o over an input: exit %d %s", code, errs)
	}
}
