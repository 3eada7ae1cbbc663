package nccl_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/pyrun"
)

// fakeCUDA runs nccl.py's Collectives on the CPU: the tensors, GEMMs and
// gloo all-reduces are real (one rank; gloo has no BF16, so a BF16
// all-reduce goes through a float32 copy), torch.cuda is faked. Each CUDA
// event reads a clock that only the costs of the case advance: ar_ms per
// eager all-reduce, graph_ar_ms per captured one, gemm_ms per GEMM; a CUDA
// graph replays the cost of what was captured in it. fail "gemm" makes a
// GEMM fail to capture, "ar" an all-reduce. argv[1] is the script; stdin a JSON list of
// cases, each run with its env set, on a fresh copy of the script, after
// a {"type":"case"} line: every burst of its args' --batch. Exit 3: no
// torch here.
const fakeCUDA = `
import contextlib, json, os, sys
try:
    import torch
    import torch.distributed as dist
except ImportError:
    sys.exit(3)

clock, capturing, case = [0.0], [], {}
real_ar, real_mm = dist.all_reduce, torch.matmul


def cost(eager, graphed):
    if capturing:
        capturing[-1].cost += case[graphed]
    else:
        clock[0] += case[eager]


def all_reduce(t, *a, **kw):
    if t.dtype != torch.bfloat16:
        return real_ar(t, *a, **kw)
    if capturing and case.get("fail") == "ar":
        raise RuntimeError("all_reduce not permitted when stream is capturing")
    cost("ar_ms", "graph_ar_ms")
    f = t.float()
    real_ar(f, *a, **kw)
    t.copy_(f)


def matmul(a, b, out=None):
    if capturing and case.get("fail") == "gemm":
        raise RuntimeError("operation not permitted when stream is capturing")
    cost("gemm_ms", "gemm_ms")
    return real_mm(a, b, out=out)


class Event:
    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self):
        self.t = clock[0]

    def elapsed_time(self, end):
        return end.t - self.t


class Graph:
    def __init__(self):
        self.cost = 0.0

    def replay(self):
        clock[0] += self.cost


@contextlib.contextmanager
def graph(g):
    capturing.append(g)
    try:
        yield
    finally:
        capturing.pop()


class Stream:
    def wait_stream(self, other):
        pass


cuda = torch.cuda
cuda.Event, cuda.CUDAGraph, cuda.graph, cuda.Stream = Event, Graph, graph, Stream
cuda.stream = lambda s: contextlib.nullcontext()
cuda.current_stream = lambda: Stream()
cuda.synchronize = lambda: None
torch.matmul, dist.all_reduce = matmul, all_reduce
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
source = open(sys.argv[1]).read()
for c in json.load(sys.stdin):
    case.clear()
    case.update(c)
    os.environ.pop("PROFDECK_NCCL_GRAPH_ONE_RANK", None)
    os.environ.update(c["env"])
    print(json.dumps({"type": "case", "name": c["name"]}), flush=True)
    ns = {"__name__": "profdeck_nccl"}
    exec(compile(source, "nccl.py", "exec"), ns)
    sys.argv = ["nccl.py"] + c["args"]
    args = ns["parse_args"]()
    coll = ns["Collectives"](torch, dist, torch.device("cpu"), 1, args)
    for m in args.batch:
        coll.burst(m)
# The group is the driver's: ended here, not left to the interpreter's
# exit, where gloo's threads can abort it ("terminate called without an
# active exception") after every line was written.
dist.destroy_process_group()
`

// fakeCase is one run of fakeCUDA.
type fakeCase struct {
	Name      string            `json:"name"`
	Env       map[string]string `json:"env"`
	Args      []string          `json:"args"`
	ARMs      float64           `json:"ar_ms"`
	GraphARMs float64           `json:"graph_ar_ms"`
	GEMMMs    float64           `json:"gemm_ms"`
	Fail      string            `json:"fail,omitempty"`
}

// runFakeCUDA runs script (nccl.py's text) under fakeCUDA, one Python for
// all cases, and parses each case's lines as the engine does.
func runFakeCUDA(t *testing.T, script []byte, cases []fakeCase) map[string]*nccl.Result {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nccl.py")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "-c", fakeCUDA, path)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 3 {
			t.Skip("no /usr/bin/python3 with torch here")
		}
		t.Fatalf("fake CUDA run: %v\n%s\n%s", err, out.String(), errb.String())
	}
	res := map[string]*nccl.Result{}
	name := ""
	chunks := map[string][]byte{}
	for _, l := range strings.SplitAfter(out.String(), "\n") {
		var c struct{ Type, Name string }
		if json.Unmarshal([]byte(l), &c) == nil && c.Type == "case" {
			name = c.Name
			continue
		}
		chunks[name] = append(chunks[name], l...)
	}
	for _, c := range cases {
		res[c.Name] = readLines(t, chunks[c.Name])
	}
	return res
}

// noGraphWarning is what the script says with --no-graph (the simulated
// script says the same).
const noGraphWarning = "CUDA graph: not captured (--no-graph): no graph or between-GEMMs figure at any M"

// TestWarningsOnFakeCUDA runs nccl.py's bursts with CUDA faked on the CPU
// and checks that each figure left out comes back as a warning in the
// parsed result, with its numbers: the graph with all-reduces between
// GEMMs not slower than the GEMMs alone (4 × 0.5 ms GEMMs, all-reduces
// free in the graph: 2.000 ms both), the sizes not tried after a capture
// failure (of a GEMM between all-reduces, of the all-reduces alone), one
// rank and --no-graph. And the other way round: with the
// all-reduces costing 0.25 ms each in the graph, the figure is there
// (3.000 − 2.000 = 1 ms, 250 µs each) and nothing is warned.
func TestWarningsOnFakeCUDA(t *testing.T) {
	args := []string{"--hidden", "64", "--count", "4", "--batch", "1,8,64", "--repeats", "3"}
	forced := map[string]string{"PROFDECK_NCCL_GRAPH_ONE_RANK": "1"}
	checks := []struct {
		fakeCase
		warn   []string // each warning, in order
		inStep float64  // the between-GEMMs figure of every burst
		errors int
		errAt  string // the error's line in the tables, up to its error text
	}{
		{fakeCase: fakeCase{Name: "not slower", Env: forced}, warn: []string{
			"between GEMMs: the graph with all-reduces at M=1 was not slower than the GEMMs alone (2.000 ms vs 2.000 ms): no figure",
			"between GEMMs: the graph with all-reduces at M=8 was not slower than the GEMMs alone (2.000 ms vs 2.000 ms): no figure",
			"between GEMMs: the graph with all-reduces at M=64 was not slower than the GEMMs alone (2.000 ms vs 2.000 ms): no figure"}},
		{fakeCase: fakeCase{Name: "slower", Env: forced, GraphARMs: 0.25}, inStep: 1},
		{fakeCase: fakeCase{Name: "GEMM capture fails", Env: forced, GraphARMs: 0.25, Fail: "gemm"}, errors: 1,
			errAt: "error: all-reduces between GEMMs in a CUDA graph at M=1: ", warn: []string{
				"between GEMMs: not tried at M=8 after its failure at M=1: no figure",
				"between GEMMs: not tried at M=64 after its failure at M=1: no figure"}},
		{fakeCase: fakeCase{Name: "all-reduce capture fails", Env: forced, GraphARMs: 0.25, Fail: "ar"}, errors: 1,
			errAt: "error: cuda graph capture of all_reduce at M=1: ", warn: []string{
				"CUDA graph: not tried at M=8 after its failure at M=1: no graph or between-GEMMs figure",
				"CUDA graph: not tried at M=64 after its failure at M=1: no graph or between-GEMMs figure"}},
		{fakeCase: fakeCase{Name: "one rank", Env: map[string]string{}, GraphARMs: 0.25}, warn: []string{
			"CUDA graph: not captured on one rank (NCCL moves no data, so a captured burst is empty): no graph or between-GEMMs figure at any M"}},
		{fakeCase: fakeCase{Name: "no graph", Env: forced, GraphARMs: 0.25, Args: []string{"--no-graph"}}, warn: []string{
			noGraphWarning}},
	}
	var cases []fakeCase
	for _, c := range checks {
		c.ARMs, c.GEMMMs, c.Args = 0.1, 0.5, append(slices.Clone(args), c.Args...)
		cases = append(cases, c.fakeCase)
	}
	res := runFakeCUDA(t, nccl.Script, cases)
	for _, c := range checks {
		r := res[c.Name]
		if len(r.Bursts) != 3 || len(r.Errors) != c.errors {
			t.Fatalf("%s: bursts %+v, errors %+v", c.Name, r.Bursts, r.Errors)
		}
		if strings.Join(r.Warnings, "\n") != strings.Join(c.warn, "\n") {
			t.Errorf("%s: warnings\n%s\nwant\n%s", c.Name, strings.Join(r.Warnings, "\n"), strings.Join(c.warn, "\n"))
		}
		for _, b := range r.Bursts {
			if b.InStepMs != c.inStep || (c.inStep > 0 && b.InStepPerOpUs != 250) {
				t.Errorf("%s: M=%d between GEMMs %.3f ms (%.1f µs each), want %.3f", c.Name, b.M, b.InStepMs, b.InStepPerOpUs, c.inStep)
			}
		}
		if c.errors > 0 && (r.Errors[0].Step != 1 || !strings.Contains(r.Errors[0].Err, "capturing")) {
			t.Errorf("%s: error %+v", c.Name, r.Errors[0])
		}
		var out bytes.Buffer
		r.WriteTables(&out)
		for _, w := range c.warn {
			if !strings.Contains(out.String(), "warning: "+w) {
				t.Errorf("%s: tables lack %q:\n%s", c.Name, w, out.String())
			}
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if !strings.HasPrefix(l, "warning: ") && !strings.HasPrefix(l, "error: ") && utf8.RuneCountInString(l) > 80 {
				t.Errorf("%s: a table line wider than 80 columns: %q", c.Name, l)
			}
		}
		if c.errAt != "" && !strings.Contains(out.String(), c.errAt) {
			t.Errorf("%s: tables lack %q:\n%s", c.Name, c.errAt, out.String())
		}
	}
}

// TestWarningLine checks the warning line's fields map to its event.
func TestWarningLine(t *testing.T) {
	r := readLines(t, []byte(`{"type":"warning","m":8,"text":"between GEMMs: no figure"}`+"\n"))
	if len(r.Warnings) != 1 || r.Warnings[0] != "between GEMMs: no figure" {
		t.Fatalf("warnings %q", r.Warnings)
	}
	kind, d, ok := nccl.LineEvent(mustLine(t, `{"type":"warning","tokens_per_gpu":16,"text":"x"}`))
	if w, isW := d.(*phases.NCCLWarning); !ok || kind != phases.KindNCCLWarning || !isW || w.Tokens != 16 {
		t.Errorf("%s %+v %v", kind, d, ok)
	}
}

func mustLine(t *testing.T, s string) pyrun.Line {
	t.Helper()
	l, ok := pyrun.ParseLine(s)
	if !ok {
		t.Fatalf("not a script line: %s", s)
	}
	return l
}
