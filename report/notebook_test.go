package report

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

var update = flag.Bool("update", false, "rewrite testdata/seed.jsonl and the golden notebook")

var fixedNow = func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) }

func goldenOpts() NotebookOptions {
	return NotebookOptions{Now: fixedNow, Location: time.UTC, Journal: "seed.jsonl", ChartsDir: "seed.charts"}
}

// TestGoldenNotebook renders recorded journals with a fixed clock and
// compares them with their golden notebooks: testdata/seed.jsonl (written by
// the Journal from seedEvents, the shape of the campaign the tool was built
// from) and testdata/demo.jsonl (recorded from `profdeck demo`: a load, a
// sweep with markers and a note, a profile capture refused by a server
// started without the profiler) and testdata/fieldrig-h200x2.jsonl (a real
// `profdeck run` on two H200s against scripts/fieldrig's decode server).
func TestGoldenNotebook(t *testing.T) {
	for _, name := range []string{"seed", "demo", "fieldrig-h200x2", "fieldrig-h200-tp1-separate", "fieldrig-h200-tp1-chunked", "fieldrig-h200-tp1-separate-rerun2", "fieldrig-h200-tp1-chunked-rerun2", "fieldrig-h200-tp1-separate-rerun3", "fieldrig-h200-tp1-chunked-rerun3"} {
		t.Run(name, func(t *testing.T) {
			jpath := filepath.Join("testdata", name+".jsonl")
			gpath := filepath.Join("testdata", name+".golden.md")
			if *update && name == "seed" {
				os.Remove(jpath)
				j, err := OpenJournal(jpath)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range seedEvents() {
					if err := j.Append(ev); err != nil {
						t.Fatal(err)
					}
				}
				j.Close()
				os.Chmod(jpath, 0o644)
			}
			rr, err := ReadJournalFile(jpath)
			if err != nil {
				t.Fatal(err)
			}
			if len(rr.Skipped) != 0 {
				t.Fatalf("recorded journal has bad lines: %v", rr.Skipped)
			}
			opts := goldenOpts()
			opts.Journal, opts.ChartsDir = name+".jsonl", name+".charts"
			md, err := RenderNotebook(rr.Events, opts)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				os.WriteFile(gpath, md, 0o644)
			}
			want, err := os.ReadFile(gpath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(md, want) {
				t.Fatalf("notebook differs from %s (run go test ./report -run TestGoldenNotebook -update after checking):\n%s", gpath, firstDiff(string(want), string(md)))
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\nwant " + x + "\n got " + y
		}
	}
	return ""
}

func TestNotebookContents(t *testing.T) {
	md, _ := RenderNotebook(seedEvents(), goldenOpts())
	s := string(md)
	for _, want := range []string{
		"# k25b6000bench1",
		"| GPUs | 8 × NVIDIA RTX PRO 6000 Blackwell Server Edition (97887 MiB each) |",
		"| decode step · communication (estimate) | 6.39 | 51.0% |",
		"**Plateau:** 1536 tok/s from C=128",
		"| 128 | 512 | 0 | 1536.2 |",
		"**Cliff:** at 16 tokens per GPU latency grows 2.7×",
		// notes verbatim, in their phase's section, in time order
		"- 09:13:25 **note** (Server/Load): stalled at 75.8 GB per GPU with the torch profiler on; restarting without it",
		"AllReduce is about half of decode time | try the FlashInfer PCIe all-reduce next",
		"![Output throughput and TPOT vs concurrency](seed.charts/macro-1-throughput-tpot.svg)",
		"09:46:40 gpu1: down — read tcp: connection reset by peer",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("notebook lacks %q", want)
		}
	}
	if strings.Contains(s, "sk-live-1234") {
		t.Error("the launch command's API key reached the notebook")
	}
	if !strings.HasSuffix(s, NotebookEndMarker+"\n") {
		t.Error("notebook does not end with the end marker")
	}
	// Sections in phase order.
	last := -1
	for _, h := range []string{"## Decode-time budget", "## Load", "## Macro", "## Micro", "## NCCL", "## Profile", "\n## Notes\n", "## Connection"} {
		i := strings.Index(s, h)
		if i < last {
			t.Errorf("section %q out of order", h)
		}
		last = i
	}
}

func TestNotebookOfNothingAndOfUnbracketedEvents(t *testing.T) {
	md, _ := RenderNotebook(nil, NotebookOptions{Now: fixedNow, Location: time.UTC})
	if !strings.Contains(string(md), "_No inputs measured yet._") || !strings.HasSuffix(string(md), NotebookEndMarker+"\n") {
		t.Fatalf("empty notebook:\n%s", md)
	}
	// Headless engines may send results with no PhaseStarted.
	md, _ = RenderNotebook(budgetEvents(phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, MedianTPOTms: 10}), NotebookOptions{Location: time.UTC})
	if !strings.Contains(string(md), "## Macro") || !strings.Contains(string(md), "not finished") {
		t.Fatalf("unbracketed:\n%s", md)
	}
}

func TestWriteNotebookAtomicWithCharts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k25.md")
	if err := WriteNotebook(p, seedEvents(), NotebookOptions{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(p)
	for _, c := range []string{"load-1-memory.svg", "macro-1-throughput-tpot.svg"} {
		if !strings.Contains(string(md), "(k25.charts/"+c+")") {
			t.Errorf("notebook does not link %s", c)
		}
		b, err := os.ReadFile(filepath.Join(dir, "k25.charts", c))
		if err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(b, new(struct{})); err != nil || !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("%s is not SVG: %v", c, err)
		}
	}
	if !bytes.Contains(mustRead(t, filepath.Join(dir, "k25.charts", "macro-1-throughput-tpot.svg")), []byte("TPOT vs concurrency")) {
		t.Error("macro chart lacks its title")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	// A notebook under a file fails with its name.
	if err := WriteNotebook(filepath.Join(p, "x.md"), nil, NotebookOptions{NoCharts: true}); err == nil || !strings.Contains(err.Error(), "x.md") {
		t.Fatalf("err %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSparkline(t *testing.T) {
	if got := Sparkline([]float64{0, 1, 2, 3, 4, 5, 6, 7}, 8); got != "▁▂▃▄▅▆▇█" {
		t.Fatalf("got %q", got)
	}
	if got := Sparkline([]float64{1, 8, 1, 1}, 2); got != "█▂" {
		t.Fatalf("bucketed %q", got)
	}
	if got := Sparkline([]float64{-1, 0, 0}, 5); got != " ▁▁" {
		t.Fatalf("unknown %q", got)
	}
}

// A level's warnings and distinct errors reach the notebook, the server's
// text verbatim and kept inside its code span.
func TestNotebookLevelWarningsAndErrors(t *testing.T) {
	lv := phases.LevelResult{Concurrency: 4, Completed: 5, Failed: 3, MedianTPOTms: 10,
		Warnings:        []string{"5 of 5 completed requests had no usage: output tokens counted by the server's /tokenize"},
		FailureExamples: []phases.FailureExample{{Kind: "http_400", Status: 400, Body: "{\"message\":\"maximum `context` length\"}\n", Count: 3}}}
	md, _ := RenderNotebook(budgetEvents(phases.KindMacroLevel, lv), NotebookOptions{Location: time.UTC})
	for _, want := range []string{"- C=4 warning: 5 of 5 completed requests had no usage",
		"- C=4 error: http_400 ×3: `{\"message\":\"maximum 'context' length\"}`\n"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("notebook lacks %q:\n%s", want, md)
		}
	}
}

// The notebook answers first: a summary (plateau and why, TPOT at C=1 and
// at the plateau with the budget's largest parts, budget, load, what next)
// comes before the header, the budget and every phase's section.
func TestNotebookSummaryComesFirst(t *testing.T) {
	b, _ := RenderNotebook(seedEvents(), goldenOpts())
	md := string(b)
	s := strings.Index(md, "## Summary")
	if s < 0 {
		t.Fatalf("no summary:\n%.600s", md)
	}
	for _, later := range []string{"## Decode-time budget", "## Load", "## Macro"} {
		if i := strings.Index(md, later); i >= 0 && i < s {
			t.Errorf("%q comes before the summary", later)
		}
	}
	sum := md[s:strings.Index(md, "## Decode-time budget")]
	for _, want := range []string{"**Plateau:** C=128", "**TPOT:** C=1 12.52 ms mean (median 12.40): communication 51%, GEMM 28%; at the plateau C=128",
		"**Budget at the plateau:** TPOT", "**Load:** ready in", "stall", "**Next:** beyond the plateau's fix, from the budget at C=128"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	// The answers fill the first screen: the header's metadata follows them.
	first := strings.Join(strings.SplitN(md, "\n", 25)[:24], "\n")
	if !strings.Contains(first, "**Next:**") || strings.Index(md, "| Campaign |") < strings.Index(md, "**Next:**") {
		t.Errorf("the answers are not in the first 24 lines, before the header:\n%s", first)
	}
}

// A long micro table lists the GEMMs that take the most time and sums the
// rest per step M, so no time is dropped.
func TestMicroTableTopRowsAndTheRestSummed(t *testing.T) {
	var gs []phases.GEMMResult
	total := 0.0
	for i := range 40 {
		g := phases.GEMMResult{Name: fmt.Sprintf("g%d", i), M: 8, StepUs: float64(i + 1)}
		gs = append(gs, g)
		total += g.StepUs
	}
	top, rest := topGEMMs(gs, microRows)
	if len(top) != microRows || len(rest) != 40-microRows || top[0].Name != "g25" {
		t.Fatalf("top %d (first %s), rest %d", len(top), top[0].Name, len(rest))
	}
	n := &nb{}
	n.restGEMMs(rest)
	want := total
	for _, g := range top {
		want -= g.StepUs
	}
	if got := n.b.String(); !strings.Contains(got, "_25 more GEMMs, summed_ | 8 |") || !strings.Contains(got, fmt.Sprintf("%.1f |", want)) {
		t.Fatalf("rest row %q, want a sum of %.1f", got, want)
	}
}

// The launch line comes with its environment's names, never the values.
func TestNotebookLaunchEnvironmentNames(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	evs := []phases.Event{
		phases.New(at, phases.KindSessionSystem, phases.SystemInfo{LaunchCommand: "vllm serve m --tensor-parallel-size 8"}),
		phases.New(at, phases.KindLoadServer, phases.ServerEvent{Action: "start", Detail: "pid 42: vllm serve m (environment: HF_TOKEN, VLLM_USE_DEEP_GEMM)"}),
	}
	b, _ := RenderNotebook(evs, goldenOpts())
	if md := string(b); !strings.Contains(md, "Its environment (names only; the values are never written): HF_TOKEN, VLLM_USE_DEEP_GEMM.") {
		t.Fatalf("notebook lacks the launch's environment:\n%s", md)
	}
}

// All-to-All is reported only with expert parallelism: a run whose
// parameters say ep false gets one line, no table and no cliff.
func TestAllToAllOnlyWithExpertParallelism(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	evs := []phases.Event{
		phases.New(at, phases.KindNCCLAllToAll, phases.NCCLAllToAll{Tokens: 1, Bytes: 1 << 20, Us: 30}),
		phases.New(at, phases.KindNCCLCliff, phases.NCCLCliff{Tokens: 16, FromUs: 30, ToUs: 90}),
	}
	for _, c := range []struct {
		params any
		table  bool
	}{{map[string]any{"ep": false}, false}, {map[string]any{"ep": true}, true}, {map[string]any{}, true}} {
		n := &nb{}
		n.ncclRun(&phaseRun{params: c.params, events: evs})
		md := n.b.String()
		if got := strings.Contains(md, "| tokens/GPU |"); got != c.table {
			t.Errorf("params %v: All-to-All table shown %v, want %v:\n%s", c.params, got, c.table, md)
		}
		if !c.table && (strings.Contains(md, "Cliff") || !strings.Contains(md, "without expert parallelism")) {
			t.Errorf("params %v: %s", c.params, md)
		}
	}
}
