package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
)

// variantsCampaign is the short sim campaign with two variants that load,
// one that serves the first's launch again (last in the file, served on
// its server) and one whose launch is no server.
const variantsCampaign = `variants:
  - matrix: {--max-num-seqs: [64, 256]}
  - name: broken
    launch: frobnicate --port 8000
  - name: same
    args: ["--max-num-seqs 64"]
capacity:
  rate: 5
  slo: tpot=2s
cost:
  gpu_hour: 2.5
`

// A four-variant campaign serves the baseline, then each variant in turn
// (one on the server of the one before it);
// the one whose launch fails is recorded with its evidence and the run
// goes on (exit 3); the journal holds each launch exactly; run --json
// lists every variant; the baseline's budget reads the baseline alone.
func TestRunVariantsOnSim(t *testing.T) {
	ctx, path := simRunSetup(t, "three variants on the simulated host", simCampaign+variantsCampaign, 3*time.Minute)
	o := runCmd(t, ctx, path, "--phases", "load,macro")
	if o.code != ExitStepFailed {
		t.Fatalf("exit %d, want %d (a variant failed)\n%s", o.code, ExitStepFailed, o.stderr)
	}
	vs := o.rep.Variants
	if len(vs) != 4 {
		t.Fatalf("%d variants in --json, want 4: %+v", len(vs), vs)
	}
	var order []string
	for _, v := range vs {
		order = append(order, v.Name)
	}
	if strings.Join(order, ",") != "max-num-seqs-64,same,max-num-seqs-256,broken" {
		t.Errorf("served in the order %v: want same beside max-num-seqs-64, on its server", order)
	}
	base := "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --port 8000"
	want := map[string]string{"max-num-seqs-64": base + " --max-num-seqs 64", "max-num-seqs-256": base + " --max-num-seqs 256", "broken": "frobnicate --port 8000", "same": base + " --max-num-seqs 64"}
	for _, v := range vs {
		if v.Launch != want[v.Name] {
			t.Errorf("%s: launch %q, want %q", v.Name, v.Launch, want[v.Name])
		}
		if v.Prediction == nil {
			t.Errorf("%s: no prediction journalled", v.Name)
		}
	}
	if vs[0].State != phases.StepDone || vs[1].State != phases.StepDone || vs[2].State != phases.StepDone {
		t.Errorf("states %s, %s, %s; want done", vs[0].State, vs[1].State, vs[2].State)
	}
	if vs[3].State != phases.StepFailed || vs[3].Evidence == "" {
		t.Errorf("broken: %s (%q), want failed with evidence", vs[3].State, vs[3].Evidence)
	}
	if !strings.Contains(o.stderr, "variant broken failed") {
		t.Errorf("stderr does not name the failed variant:\n%s", o.stderr)
	}
	checkVariantJournal(t, filepath.Join(filepath.Dir(path), "nb.journal.jsonl"), want)
	checkTableAgrees(t, o.rep)
	nb, err := os.ReadFile(filepath.Join(filepath.Dir(path), "nb.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The baseline's load and each variant's but same's (on
	// max-num-seqs-64's server), in the plan, after the run and in the
	// notebook alike.
	for _, w := range []string{"profdeck run: 4 load(s); expected", ", 4 load(s)\n", "Loads of the model: run 1: 4.", "same: on max-num-seqs-64's server"} {
		if !strings.Contains(o.stderr+o.stdout+string(nb), w) {
			t.Errorf("no %q in the run's output or notebook:\n%s%s", w, o.stderr, o.stdout)
		}
	}
	for _, w := range []string{"- **Best variant:** ", "variants-pareto.", "On the front (tokens/s per user"} {
		if !strings.Contains(string(nb), w) {
			t.Errorf("the notebook has no %q", w)
		}
	}
	// Run again: every variant had its turn, none is served again.
	o = runCmd(t, ctx, path, "--phases", "load,macro")
	for _, v := range o.rep.Variants {
		if v.State != want2(v.Name) {
			t.Errorf("second run: %s %s", v.Name, v.State)
		}
	}
	if n := countKind(t, filepath.Join(filepath.Dir(path), "nb.journal.jsonl"), phases.KindVariantStarted); n != 4 {
		t.Errorf("%d variants started after the second run, want 4 (none again)", n)
	}
}

func want2(name string) string {
	if name == "broken" {
		return phases.StepFailed
	}
	return phases.StepDone
}

// checkVariantJournal wants the journal's variant.started launches exactly,
// each variant's sweep within its part, and the baseline's events without
// any variant's.
func checkVariantJournal(t *testing.T, journal string, want map[string]string) {
	t.Helper()
	rr, err := report.ReadJournalFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range rr.Events {
		if d, ok := ev.Data.(phases.VariantStarted); ok && d.Launch != want[d.Spec.Name] {
			t.Errorf("journalled launch of %s: %q", d.Spec.Name, d.Launch)
		}
	}
	for _, name := range []string{phases.Baseline, "max-num-seqs-256"} {
		if sw, err := report.LoadSweep(journal + "#" + name); err != nil || len(sw.Levels) == 0 || !strings.Contains(sw.Source, "variant "+name) {
			t.Errorf("compare's sweep of %s: %v, %d levels, source %q", name, err, len(sw.Levels), sw.Source)
		}
	}
	if _, err := report.LoadSweep(journal + "#nope"); err == nil || !strings.Contains(err.Error(), `no variant "nope" (it has: baseline, broken, max-num-seqs-256, max-num-seqs-64, same)`) {
		t.Errorf("an unknown variant: %v", err)
	}
	by := report.VariantEvents(rr.Events)
	for _, name := range []string{phases.Baseline, "max-num-seqs-64", "max-num-seqs-256"} {
		if countLevels(by[name]) == 0 {
			t.Errorf("%s: no sweep level among its events", name)
		}
	}
	if countLevels(by[phases.Baseline]) != countLevels(by["max-num-seqs-64"]) {
		t.Errorf("the baseline's events hold %d levels, a variant's %d: the baseline mixes in a variant's", countLevels(by[phases.Baseline]), countLevels(by["max-num-seqs-64"]))
	}
}

func countLevels(evs []phases.Event) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == phases.KindMacroLevel {
			n++
		}
	}
	return n
}

func countKind(t *testing.T, journal, kind string) int {
	t.Helper()
	b, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		var ev struct{ Kind string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Kind == kind {
			n++
		}
	}
	return n
}

// A run interrupted in its second variant resumes there: the first
// variant is not served again, the one cut short is.
func TestRunVariantsResumeAfterInterrupt(t *testing.T) {
	ctx, path := simRunSetup(t, "variants on the simulated host, interrupted", simCampaign+"variants:\n  - matrix: {--max-num-seqs: [64, 256]}\n", 3*time.Minute)
	journal := filepath.Join(filepath.Dir(path), "nb.journal.jsonl")
	cut, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		for cut.Err() == nil && startsOf(journal, "max-num-seqs-256") == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}()
	o := runCmd(t, cut, path, "--phases", "load,macro")
	if o.code != ExitInterrupted {
		t.Fatalf("exit %d, want %d (interrupted)\n%s", o.code, ExitInterrupted, o.stderr)
	}
	o = runCmd(t, ctx, path, "--phases", "load,macro")
	if o.code != ExitOK {
		t.Fatalf("resumed: exit %d\n%s", o.code, o.stderr)
	}
	if a, b := startsOf(journal, "max-num-seqs-64"), startsOf(journal, "max-num-seqs-256"); a != 1 || b != 2 {
		t.Errorf("launches: max-num-seqs-64 %d (want 1, done), max-num-seqs-256 %d (want 2, cut short then redone)", a, b)
	}
	for _, v := range o.rep.Variants {
		if v.State != phases.StepDone {
			t.Errorf("%s: %s", v.Name, v.State)
		}
	}
}

// startsOf counts the journal's variant.started of one variant.
func startsOf(journal, name string) int {
	b, _ := os.ReadFile(journal)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		var ev struct {
			Kind string
			Data struct{ Spec struct{ Name string } }
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Kind == phases.KindVariantStarted && ev.Data.Spec.Name == name {
			n++
		}
	}
	return n
}

// checkTableAgrees wants the notebook's variants table to give each
// variant of run --json with the same state and measured plateau.
func checkTableAgrees(t *testing.T, rep runReport) {
	t.Helper()
	nb, err := os.ReadFile(rep.Notebook)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Variants {
		plateau := "—"
		if v.Measured.Has["plateau_tok_s"] {
			plateau = fmt.Sprintf("%.0f", v.Measured.PlateauTokS)
		}
		row := ""
		for _, line := range strings.Split(string(nb), "\n") {
			if strings.HasPrefix(line, "| "+v.Name+" |") {
				row = line
			}
		}
		cells := strings.Split(strings.TrimSuffix(row, " |"), " | ")
		if len(cells) < 5 || !strings.HasPrefix(cells[2], v.State) || !strings.HasPrefix(cells[3], plateau) {
			t.Errorf("%s: --json %s, plateau %s; the notebook's row %q", v.Name, v.State, plateau, row)
			continue
		}
		checkFleetCells(t, v, cells[len(cells)-2:])
	}
}

// checkFleetCells wants the row's GPUs for the target and $/M output
// tokens to be --json's fleet figures: measured (predicted, …), or a dash.
func checkFleetCells(t *testing.T, v runVariant, cells []string) {
	t.Helper()
	f := v.Fleet
	if v.State == phases.StepDone && (f.GPUs == nil || f.USDPerMTok == nil) {
		t.Errorf("%s: done, but --json's fleet lacks a measured figure: %+v", v.Name, f)
	}
	if p := v.Prediction; p != nil && p.PlateauTokS.OK && (f.GPUsPredicted == nil || f.USDPerMTokPredicted == nil) {
		t.Errorf("%s: its plateau predicted, but --json's fleet lacks a predicted figure: %+v", v.Name, f)
	}
	want := []string{"—", "—"}
	if f.GPUs != nil {
		want[0] = fmt.Sprintf("%d", *f.GPUs)
	}
	if f.USDPerMTok != nil {
		want[1] = fmt.Sprintf("%.3g", *f.USDPerMTok)
	}
	if f.GPUsPredicted != nil {
		want[0] += fmt.Sprintf(" (%d", *f.GPUsPredicted)
	}
	if f.USDPerMTokPredicted != nil {
		want[1] += fmt.Sprintf(" (%.3g", *f.USDPerMTokPredicted)
	}
	for i, w := range want {
		if !strings.HasPrefix(cells[i], w) {
			t.Errorf("%s: the notebook's %q, --json's %q", v.Name, cells[i], w)
		}
	}
}

// run.variant_steps [macro, profile]: the variant launches with the
// profiler configured and its profile runs after its sweep.
func TestRunVariantProfiles(t *testing.T) {
	ctx, path := simRunSetup(t, "a variant profiled on the simulated host", simCampaign+
		"run:\n  variant_steps: [macro, profile]\nvariants:\n  - name: cap4\n    args: [--max-num-seqs 4]\n", 3*time.Minute)
	o := runCmd(t, ctx, path, "--phases", "load,macro")
	if o.code != ExitOK {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	var got []string
	for _, s := range o.rep.Steps {
		if s.Variant == "cap4" {
			got = append(got, s.Name+" "+s.State)
			if s.Name == "serve" && !strings.Contains(s.Reason, "with the profiler configured") {
				t.Errorf("the variant's load: %q", s.Reason)
			}
		}
	}
	if strings.Join(got, ", ") != "serve done, macro done, profile done" {
		t.Errorf("the variant's steps: %v", got)
	}
}
