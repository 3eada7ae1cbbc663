package headless

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
)

// profdeck run --loadgen host sweeps with the load generator on the host
// (on the simulated host, its agent in this process) and journals the
// sweep as it does one run here.
func TestRunMacroOnHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeCampaign(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := runCmd(t, ctx, path, "--phases", "load,macro", "--loadgen", "host")
	if s := stepState(o.rep, "macro"); s.State != phases.StepDone {
		t.Fatalf("macro step %s (%s); exit %d\n%s", s.State, s.Reason, o.code, o.stderr)
	}
	rr, err := report.ReadJournalFile(filepath.Join(dir, "nb.journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	onHost, levels := false, 0
	for _, ev := range rr.Events {
		switch d := ev.Data.(type) {
		case phases.PhaseStarted:
			if p, ok := d.Params.(map[string]any); ok && d.Name == phases.Macro && p["loadgen"] == "host" {
				onHost = true
			}
		case phases.LevelResult:
			levels++
		}
	}
	if !onHost || levels != 2 {
		t.Fatalf("journal: sweep on the host %v, %d levels (want 2)", onHost, levels)
	}
	var out, errb bytes.Buffer
	if code := RunMain(ctx, []string{"-c", path, "--loadgen", "gpu"}, &out, &errb); code != ExitBadInput || !strings.Contains(errb.String(), "--loadgen") {
		t.Fatalf("--loadgen gpu: exit %d, want 2\n%s", code, errb.String())
	}
}

// profdeck run --loadgen-hosts runs the campaign's sweep over the load
// agents (two agent processes on the simulated host): the journal holds
// ordinary levels, each with its agents.
func TestRunMacroOverLoadAgents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeCampaign(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := runCmd(t, ctx, path, "--phases", "load,macro", "--loadgen-hosts", "sim:2")
	if s := stepState(o.rep, "macro"); s.State != phases.StepDone {
		t.Fatalf("macro step %s (%s); exit %d\n%s", s.State, s.Reason, o.code, o.stderr)
	}
	rr, err := report.ReadJournalFile(filepath.Join(dir, "nb.journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	agents, levels := false, 0
	for _, ev := range rr.Events {
		switch d := ev.Data.(type) {
		case phases.PhaseStarted:
			if p, ok := d.Params.(map[string]any); ok && d.Name == phases.Macro && p["loadgen"] == "agents" {
				agents = true
			}
		case phases.LevelResult:
			if d.Completed > 0 && len(d.Agents) == min(d.Concurrency, 2) {
				levels++
			}
		}
	}
	if !agents || levels != 2 {
		t.Fatalf("journal: sweep over agents %v, %d levels with their agents (want 2)", agents, levels)
	}
}
