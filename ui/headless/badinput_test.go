package headless_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/ui/headless"
)

// Every parser exits 2 with one line naming the file when the file is
// missing, empty or binary (they exited 0 or 1).
func TestParsersBadInputExit2(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, nil, 0o644)
	bin := filepath.Join(dir, "bin.dat")
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i * 7)
	}
	os.WriteFile(bin, b, 0o644)
	parsers := map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"vllm-log": headless.ParseLogMain, "nvidia-smi": headless.ParseSMIMain,
		"metrics": headless.ParseMetricsMain, "profiler-table": headless.ParseProfilerMain,
	}
	for name, main := range parsers {
		for _, f := range []string{filepath.Join(dir, "missing.txt"), empty, bin} {
			code, _, errOut := runCLI(t, main, f)
			if code != 2 || !strings.Contains(errOut, filepath.Base(f)) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("parse %s %s: exit %d, stderr %q: want 2 and one line naming the file", name, filepath.Base(f), code, errOut)
			}
		}
	}
}

// nvidia-smi output over 32 MiB is read up to 32 MiB, and the command
// says so.
func TestParseSMISaysWhenCut(t *testing.T) {
	t.Parallel()
	fix, err := os.ReadFile("../../phases/load/smi/testdata/nvidia-smi-03-h100x8-535-table.txt")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "looped.txt")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= 32<<20; n += len(fix) {
		f.Write(fix)
	}
	f.Close()
	code, out, errOut := runCLI(t, headless.ParseSMIMain, p)
	if code != 0 || !strings.Contains(out, `"gpus"`) || !strings.Contains(errOut, "is over 32 MiB: only its first 32 MiB were read") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// The engine's refusals of what was asked (a prompt longer than the
// server's max_model_len, --output-len 1) are bad input: exit 2.
func TestSweepRefusalsExit2(t *testing.T) {
	_, url := startEmu(t, vllmemu.Config{MaxModelLen: 1000})
	code, _, errOut := sweepCLI(t, "--url", url, "--concurrency", "1", "--requests", "2", "--input-len", "2000", "--output-len", "8")
	if code != 2 || !strings.Contains(errOut, "more than test/model's max_model_len of 1000") {
		t.Fatalf("max_model_len: exit %d, %q", code, errOut)
	}
	code, _, errOut = sweepCLI(t, "--url", url, "--concurrency", "1", "--output-len", "1")
	if code != 2 || !strings.Contains(errOut, "--output-len: want 2 (so that TPOT is defined)") {
		t.Fatalf("output-len 1: exit %d, %q", code, errOut)
	}
}

// A malformed dataset is one line naming the file and the line, exit 2,
// before any host is opened.
func TestSweepMalformedDatasetExit2(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prompts.jsonl")
	os.WriteFile(p, []byte("{\"prompt\": \"a b\", \"output_len\": 4}\n{\"prompt\": \"c\"\n"), 0o644)
	for _, args := range [][]string{
		{"--host", "sim", "--dataset", "jsonl", p, "--concurrency", "1"},
		{"--host", "sim", "--dataset=jsonl", "--dataset-file", p},
	} {
		code, _, errOut := runCLI(t, headless.SweepMain, args...)
		if code != 2 || !strings.Contains(errOut, p+":2:") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
	code, _, errOut := runCLI(t, headless.SweepMain, "--host", "sim", "--slo", "ttft=fast")
	if code != 2 || !strings.Contains(errOut, "--slo") {
		t.Errorf("bad --slo: exit %d, stderr %q", code, errOut)
	}
}
