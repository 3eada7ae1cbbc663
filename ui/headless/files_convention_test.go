package headless_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

// The commands that read local files share the usage style and the exit
// codes of the others; each takes the shared flags that mean something for
// it and its usage says which it has not.
func TestFileCommandsConvention(t *testing.T) {
	for _, tc := range []struct {
		name  string
		main  func(context.Context, []string, io.Writer, io.Writer) int
		flags []string // shared flags it takes
		lacks string   // what its usage says it has not
	}{
		{"report", headless.ReportMain, []string{"-c string"}, "no --host; the notebook is its result (-o), so no --json or --jsonl"},
		{"compare", headless.CompareMain, []string{"--json string"}, "no -c or --host, and no --jsonl"},
		{"capacity", headless.CapacityMain, []string{"-c string", "--json string"}, "It reads the file it names (or the campaign's journal) only: no --host, and no --jsonl"},
		{"explain", headless.ExplainMain, []string{"--json string"}, "no -c or --host, and no --jsonl"},
		{"parse vllm-log", headless.ParseLogMain, []string{"--json string"}, "no -c, --host or --jsonl"},
		{"parse nvidia-smi", headless.ParseSMIMain, []string{"--json string"}, "no -c, --host or --jsonl"},
		{"parse metrics", headless.ParseMetricsMain, []string{"--json string"}, "no -c, --host or --jsonl"},
		{"parse profiler-table", headless.ParseProfilerMain, []string{"--json string"}, "no -c, --host or --jsonl"},
	} {
		code, _, errs := runCLI(t, tc.main, "-h")
		if code != 0 || !strings.HasPrefix(errs, "usage: profdeck "+tc.name+" ") || !strings.Contains(strings.Join(strings.Fields(errs), " "), tc.lacks) {
			t.Errorf("%s -h: exit %d, %q", tc.name, code, errs)
		}
		for _, f := range tc.flags {
			if !strings.Contains(errs, "\n  "+f+"\n") {
				t.Errorf("%s -h lacks %s:\n%s", tc.name, f, errs)
			}
		}
		for _, f := range []string{"--host", "--jsonl"} {
			if code, _, _ := runCLI(t, tc.main, f, "x"); code != headless.ExitBadInput {
				t.Errorf("%s %s: exit %d", tc.name, f, code)
			}
		}
		if code, _, _ := runCLI(t, tc.main, "--bogus"); code != headless.ExitBadInput {
			t.Errorf("%s --bogus: exit %d", tc.name, code)
		}
	}
}

// parse writes its JSON to stdout, or to --json FILE; an output path that
// cannot be written is bad input before the file is read.
func TestParseJSONFile(t *testing.T) {
	in := "../../phases/macro/servermetrics/testdata/constructed-v0.11-dp2-specdecode.txt"
	code, stdout, errs := runCLI(t, headless.ParseMetricsMain, in)
	if code != 0 || !json.Valid([]byte(stdout)) {
		t.Fatalf("exit %d %q", code, errs)
	}
	out := filepath.Join(t.TempDir(), "m.json")
	code, so, errs := runCLI(t, headless.ParseMetricsMain, in, "--json", out)
	if b, _ := os.ReadFile(out); code != 0 || so != "" || string(b) != stdout {
		t.Fatalf("exit %d, stdout %q, stderr %q, file %q", code, so, errs, b)
	}
	code, _, errs = runCLI(t, headless.ParseMetricsMain, "--json", filepath.Join(t.TempDir(), "no", "m.json"), in)
	if code != 2 || !strings.Contains(errs, "--json") {
		t.Fatalf("exit %d %q", code, errs)
	}
}
