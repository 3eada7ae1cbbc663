package headless

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/report"
)

// simCampaign is a campaign on the simulated host scaled down to seconds.
const simCampaign = `name: test campaign
host: sim
notebook: nb.md
server:
  url: http://127.0.0.1:8000
  launch: vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --port 8000
  log: /var/log/vllm/server.log
  profiler_dir: /tmp/vllm_profile
model:
  name: moonshotai/Kimi-K2.5
  preset: kimi-k2.5
  tp: 8
load:
  stall_after: 2s
  poll_interval: 200ms
macro:
  concurrency: [1, 8]
  duration: 1s
  requests: 12
  warmup: 1
  input_len: 32
  output_len: 8
micro:
  batch: [1, 8]
nccl:
  batch: [1, 8]
profile:
  requests: 2
sim:
  load_time: 1s
  profiler_flush: 200ms
`

func writeCampaign(t *testing.T, dir, extra string) string {
	t.Helper()
	p := filepath.Join(dir, "profdeck.yaml")
	if err := os.WriteFile(p, []byte(simCampaign+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// simRunSetup readies a test of runs on the simulated host: it runs in
// parallel and not with -short (why says what the runs are), writes text
// as profdeck.yaml in a directory of its own, and gives the file's path and
// a context that ends after timeout.
func simRunSetup(t *testing.T, why, text string, timeout time.Duration) (context.Context, string) {
	t.Helper()
	t.Parallel()
	if testing.Short() {
		t.Skip(why)
	}
	path := filepath.Join(t.TempDir(), "profdeck.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx, path
}

type runOutput struct {
	code           int
	stdout, stderr string
	rep            runReport
}

func runCmd(t *testing.T, ctx context.Context, path string, args ...string) runOutput {
	t.Helper()
	jpath := filepath.Join(filepath.Dir(path), "run.json")
	os.Remove(jpath)
	var out, errb bytes.Buffer
	code := RunMain(ctx, append([]string{"-c", path, "--json", jpath}, args...), &out, &errb)
	o := runOutput{code: code, stdout: out.String(), stderr: errb.String()}
	b, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatalf("exit %d, no --json file: %v\n%s", code, err, o.stderr)
	}
	if err := json.Unmarshal(b, &o.rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, b)
	}
	return o
}

func stepState(rep runReport, name string) campaignrun.StepResult {
	for _, s := range rep.Steps {
		if s.Name == name {
			return s
		}
	}
	return campaignrun.StepResult{}
}

// startedSteps lists the steps the journal's last run started.
func startedSteps(t *testing.T, journal string) []string {
	t.Helper()
	rr, err := report.ReadJournalFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, ev := range rr.Events {
		switch d := ev.Data.(type) {
		case phases.RunStarted:
			steps = nil
		case phases.RunStep:
			if d.State == phases.StepStarted {
				steps = append(steps, d.Name)
			}
		}
	}
	return steps
}

func TestRunWholeCampaignOnSim(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a whole campaign on the simulated host")
	}
	dir := t.TempDir()
	path := writeCampaign(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := runCmd(t, ctx, path)
	if o.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	if len(o.rep.Steps) != len(campaignrun.StepsOneLoad) {
		t.Fatalf("%d steps in --json, want %d", len(o.rep.Steps), len(campaignrun.StepsOneLoad))
	}
	// One load, said before the start and at the end.
	if !strings.Contains(o.stderr, "one-load order") || !strings.Contains(o.stderr, "1 load(s); expected") {
		t.Errorf("no plan with its loads before the start:\n%s", o.stderr)
	}
	if !strings.Contains(o.stdout, ", 1 load(s)\n") {
		t.Errorf("no wall time with 1 load at the end:\n%s", o.stdout)
	}
	for _, s := range o.rep.Steps {
		if s.State != phases.StepDone || s.Started.IsZero() || s.Finished.Before(s.Started) {
			t.Errorf("step %s: %s (%s), started %v finished %v", s.Name, s.State, s.Reason, s.Started, s.Finished)
		}
	}
	if !o.rep.Budget.Single.Complete() {
		t.Errorf("the budget at C=1 is not complete: missing %v", o.rep.Budget.Single.Missing)
	}
	if o.rep.Notebook != filepath.Join(dir, "nb.md") {
		t.Errorf("notebook %q", o.rep.Notebook)
	}
	nb, err := os.ReadFile(o.rep.Notebook)
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range []string{"## Decode-time budget", "## Campaign steps", "## Load", "## Macro", "## Micro", "## NCCL", "## Profile", report.NotebookEndMarker} {
		if !bytes.Contains(nb, []byte(sec)) {
			t.Errorf("the notebook lacks %q", sec)
		}
	}
	if !bytes.Contains(nb, []byte("| 1 | profile | done |")) {
		t.Errorf("the steps table lacks the profile row:\n%s", nb)
	}
	// Nothing is left to do: a second run does no step but the notebook.
	o = runCmd(t, ctx, path)
	if o.code != 0 {
		t.Fatalf("second run: exit %d\n%s", o.code, o.stderr)
	}
	if got := startedSteps(t, filepath.Join(dir, "nb.journal.jsonl")); strings.Join(got, ",") != "doctor,notebook" {
		t.Errorf("second run started %v, want only the doctor and the notebook", got)
	}
}

func TestRunProfilerStallThenRerun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a whole campaign on the simulated host")
	}
	dir := t.TempDir()
	path := writeCampaign(t, dir, "  stall_with_profiler_at_gib: 75.8\nrun:\n  order: classic\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := runCmd(t, ctx, path)
	if o.code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	rs, pr := stepState(o.rep, campaignrun.Restart), stepState(o.rep, campaignrun.Profile)
	if rs.State != phases.StepStalled || !strings.Contains(rs.Reason, "STALLED") {
		t.Errorf("profiler restart: %s (%s), want stalled", rs.State, rs.Reason)
	}
	if pr.State != phases.StepSkipped || !strings.Contains(pr.Reason, "stalled") || !strings.Contains(pr.Reason, "75.") {
		t.Errorf("profile: %s (%s), want skipped with the stall as its reason", pr.State, pr.Reason)
	}
	for _, s := range []string{campaignrun.Serve, campaignrun.Macro, campaignrun.FreeGPUs, campaignrun.Micro, campaignrun.NCCL, campaignrun.LeaveServer, campaignrun.Notebook} {
		if st := stepState(o.rep, s); st.State != phases.StepDone {
			t.Errorf("step %s: %s (%s), want done", s, st.State, st.Reason)
		}
	}
	for _, want := range []string{"step profiler_restart stalled:", "step profile skipped: the restart with the profiler stalled"} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, o.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nb.md")); err != nil {
		t.Errorf("no notebook: %v", err)
	}
	// Without the stall, the rerun does the restart and the profile only
	// (then leaves the server serving and writes the notebook).
	writeCampaign(t, dir, "run:\n  order: classic\n")
	o = runCmd(t, ctx, path)
	if o.code != 0 {
		t.Fatalf("rerun: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	got := startedSteps(t, filepath.Join(dir, "nb.journal.jsonl"))
	if want := "doctor,profiler_restart,profile,leave_server,notebook"; strings.Join(got, ",") != want {
		t.Errorf("rerun started %v, want %s", got, want)
	}
	if s := stepState(o.rep, campaignrun.Macro); s.State != phases.StepDone || !s.Earlier {
		t.Errorf("rerun macro: %+v, want done earlier", s)
	}
}

func TestRunInterruptedMidSweepThenResumes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a whole campaign on the simulated host")
	}
	dir := t.TempDir()
	path := writeCampaign(t, dir, "")
	journal := filepath.Join(dir, "nb.journal.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Ctrl-C once the sweep has finished its first level.
	ictx, interrupt := context.WithCancel(ctx)
	go func() {
		for ictx.Err() == nil {
			if b, err := os.ReadFile(journal); err == nil && bytes.Contains(b, []byte(`"kind":"macro.level"`)) {
				interrupt()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	o := runCmd(t, ictx, path)
	interrupt()
	if o.code != 130 {
		t.Fatalf("exit %d, want 130\n%s", o.code, o.stderr)
	}
	if s := stepState(o.rep, campaignrun.Macro); s.State != phases.StepStopped {
		t.Errorf("macro: %+v, want stopped", s)
	}
	// The one-load order timed the GEMMs and the collectives first.
	if s := stepState(o.rep, campaignrun.Micro); s.State != phases.StepDone {
		t.Errorf("micro: %+v, want done before the sweep", s)
	}
	if s := stepState(o.rep, campaignrun.Profile); s.State != phases.StepPending {
		t.Errorf("profile: %+v, want pending", s)
	}
	if s := stepState(o.rep, campaignrun.Notebook); s.State != phases.StepDone {
		t.Errorf("notebook after the interrupt: %+v, want done", s)
	}
	nb, _ := os.ReadFile(filepath.Join(dir, "nb.md"))
	if !bytes.Contains(nb, []byte("| 1 | macro | stopped |")) || !bytes.Contains(nb, []byte("C=1")) {
		t.Errorf("the notebook lacks the stopped sweep and its first level:\n%s", nb)
	}
	o = runCmd(t, ctx, path)
	if o.code != 0 {
		t.Fatalf("rerun: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	got := startedSteps(t, journal)
	if want := "doctor,serve,macro,profile,leave_server,notebook"; strings.Join(got, ",") != want {
		t.Errorf("rerun started %v, want %s: it resumes at the sweep (after the doctor and making sure the server serves)", got, want)
	}
	// Each run on host sim has a simulated deployment of its own, so the
	// rerun loads once, with the profiler configured for the profile.
	if s := stepState(o.rep, campaignrun.Serve); !strings.Contains(s.Reason, "with the profiler configured") {
		t.Errorf("rerun serve: %+v, want a load with the profiler configured", s)
	}
	if !strings.Contains(o.stdout, ", 1 load(s)\n") {
		t.Errorf("rerun: want 1 load:\n%s", o.stdout)
	}
}

// A first load that fails ends the run with what was gathered: every later
// step is skipped with the failure as its reason, the notebook is written.
func TestRunFirstLoadFails(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a campaign on the simulated host")
	}
	dir := t.TempDir()
	path := writeCampaign(t, dir, "  fail: oom\nrun:\n  order: classic\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := runCmd(t, ctx, path)
	if o.code != 3 {
		t.Fatalf("exit %d, want 3\n%s", o.code, o.stderr)
	}
	if s := stepState(o.rep, campaignrun.Serve); s.State != phases.StepFailed || !strings.Contains(s.Reason, "oom") {
		t.Errorf("serve: %+v, want failed with the OOM", s)
	}
	for _, name := range []string{campaignrun.Macro, campaignrun.FreeGPUs, campaignrun.Micro, campaignrun.NCCL, campaignrun.Restart, campaignrun.Profile, campaignrun.LeaveServer} {
		if s := stepState(o.rep, name); s.State != phases.StepSkipped || !strings.Contains(s.Reason, "the server did not come up") {
			t.Errorf("%s: %+v, want skipped because the server did not come up", name, s)
		}
	}
	if s := stepState(o.rep, campaignrun.Notebook); s.State != phases.StepDone {
		t.Errorf("notebook: %+v", s)
	}
	if n := strings.Count(o.stderr, "profdeck run: step "); n != 8 {
		t.Errorf("%d step lines on stderr, want one per step not done (8):\n%s", n, o.stderr)
	}
}

func TestRunBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeCampaign(t, dir, "")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", simCampaign+"run:\n  leave_server: running\n")
	// A server that is down (a closed loopback port) and no launch command
	// to bring it up; a model that names no preset; a level this machine
	// cannot open connections for.
	down := write("down.yaml", fmt.Sprintf("host: local\nnotebook: nb.md\nserver:\n  url: http://%s\nmodel:\n  preset: kimi-k2.5\n", closedAddr(t)))
	noModel := write("nomodel.yaml", "host: local\nnotebook: nb.md\nmodel:\n  name: some/model\n")
	huge := write("huge.yaml", strings.Replace(simCampaign, "concurrency: [1, 8]", "concurrency: [1, 100000000]", 1))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", path, "--phases", "macro,gemm"}, `--phases: "gemm" is not a phase`},
		{[]string{"-c", path, "--redo", "warmup"}, `--redo: "warmup" is neither a phase`},
		{[]string{"-c", bad}, "run.leave_server: must be serving, profiler or stopped"},
		{[]string{"-c", down}, "the server is down (GET http://127.0.0.1:"},
		{[]string{"-c", down}, "server.launch is empty"},
		{[]string{"-c", noModel}, "set model.preset"},
		{[]string{"-c", huge}, "line 17: macro.concurrency: 100000000 is more than 65536"},
		{[]string{"-c", path, "--json", filepath.Join(dir, "no", "such", "dir", "x.json")}, "--json"},
	} {
		var out, errb bytes.Buffer
		code := RunMain(context.Background(), tc.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errb.String(), tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nb.journal.jsonl")); err == nil {
		t.Error("bad input started a journal")
	}
}

// Two simulated nodes serving TP16 end to end: the server started on both
// (the head's launch, then the worker's), both loads followed, NCCL across
// the nodes, and the notebook lists each node and its load.
func TestRunTwoSimNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a whole campaign on two simulated nodes")
	}
	dir := t.TempDir()
	camp := strings.Replace(simCampaign, "  tp: 8\n", "  tp: 16\n", 1)
	camp = strings.Replace(camp, "  load_time: 1s\n", "  load_time: 1s\n  nodes: 2\n", 1)
	camp = strings.Replace(camp, "  launch: vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --port 8000\n",
		"  launch: vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 16 --nnodes 2 --node-rank 0 --port 8000\n"+
			"  worker_launch: vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 16 --nnodes 2 --node-rank $PROFDECK_NODE_RANK --master-addr $PROFDECK_HEAD --headless\n", 1)
	camp = strings.Replace(camp, "nccl:\n  batch: [1, 8]\n", "nccl:\n  batch: [1, 8]\n  env:\n    NCCL_SOCKET_IFNAME: eth0\n", 1)
	path := filepath.Join(dir, "profdeck.yaml")
	if err := os.WriteFile(path, []byte(camp), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := runCmd(t, ctx, path, "--phases", "load,nccl")
	if o.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	nb, err := os.ReadFile(o.rep.Notebook)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| Node sim0 | 8 × NVIDIA H200", "| Node sim1 | 8 × NVIDIA H200", "Node **sim0**: GPU memory", "Node **sim1**: GPU memory",
		"sim1 server **start**", "without expert parallelism", "NCCL_SOCKET_IFNAME"} {
		if !bytes.Contains(nb, []byte(want)) {
			t.Errorf("the notebook lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("notebook:\n%s", nb)
	}
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
