package headless_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

// The values the audit found taken are refused at parse time, exit 2, in
// one line naming the flag, before any host is opened or request sent: a
// NaN or infinite rate or range ratio (the whole sweep ran, then its result
// could not be written), a level given twice, SLO bounds that round to
// nothing or overflow, negative counts that fell back to defaults (--requests
// -5 ran 64), a negative timeout that failed every request and blamed the
// server. The URL has no server behind it: a value taken would exit 1.
func TestSweepOutsideValuesExit2(t *testing.T) {
	t.Parallel()
	url := "http://127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "NaN"}, "--rate: NaN"},
		{[]string{"--rate", "-Inf"}, "--rate: -Inf"},
		{[]string{"--range-ratio", "NaN"}, "--range-ratio: NaN"},
		{[]string{"--concurrency", "1,1"}, "--concurrency: 1 is given twice"},
		{[]string{"--slo", "ttft=1e-9"}, `--slo: ttft="1e-9": want a duration from 1µs to 24h`},
		{[]string{"--slo", "ttft=1e300"}, `--slo: ttft="1e300"`},
		{[]string{"--slo", "ttft=Inf"}, `--slo: ttft="Inf"`},
		{[]string{"--slo", "ttft=NaN"}, `--slo: ttft="NaN"`},
		{[]string{"--requests", "-5"}, "--requests: must not be negative, got -5"},
		{[]string{"--duration", "-1s"}, "--duration: must not be negative, got -1s"},
		{[]string{"--timeout", "-1s"}, "--timeout: must be more than 0, got -1s"},
	} {
		code, _, errOut := runCLI(t, headless.SweepMain, append([]string{"--url", url}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errOut, tc.want)
		}
	}
}

// The same values in a campaign file stop `run` when the file is read,
// naming the key and its line, before a journal is started or a server
// launched (macro.rate: .inf used to end with the sweep "done" and no level
// journalled, and the next run skipped the sweep).
func TestRunOutsideCampaignValuesExit2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ macro, want string }{
		{"  rate: .inf\n", "line 4: macro.rate: +Inf"},
		{"  rate: .nan\n", "line 4: macro.rate: NaN"},
		{"  range_ratio: .nan\n", "line 4: macro.range_ratio: NaN"},
		{"  concurrency: [1, 1]\n", "line 4: macro.concurrency: 1 is given twice"},
		{"  slo: ttft=1e-9\n", "line 4: macro.slo: ttft=\"1e-9\""},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "profdeck.yaml")
		os.WriteFile(path, []byte("host: sim\nnotebook: nb.md\nmacro:\n"+tc.macro), 0o644)
		code, _, errOut := runCLI(t, headless.RunMain, "-c", path)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 with %q", tc.macro, code, errOut, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "nb.journal.jsonl")); err == nil {
			t.Errorf("%q: a journal was started", tc.macro)
		}
	}
}

// Lists of levels and batch sizes go through one parser: a level given
// twice or out of range is refused by profile --levels, micro --batch and
// nccl --tokens alike.
func TestIntListsOneParser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		main func(context.Context, []string, io.Writer, io.Writer) int
		args []string
		want string
	}{
		{headless.ProfileMain, []string{"--host", "sim", "--levels", "1,1"}, "--levels: 1 is given twice"},
		{headless.ProfileMain, []string{"--host", "sim", "--levels", "1,5000"}, "--levels: 5000 is more than 4096"},
		{headless.MicroMain, []string{"--host", "sim", "--batch", "8,8"}, "8 is given twice"},
		{headless.NCCLMain, []string{"--host", "sim", "--tokens", "0"}, "0 is less than 1"},
	} {
		code, _, errOut := runCLI(t, tc.main, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 with %q", tc.args, code, errOut, tc.want)
		}
	}
}
