package profile

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/local"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is needed for the host-side trace summary test")
		}
		t.Skip("python3 not found")
	}
}

// The embedded script, run on a real host (this machine) as the capture
// runs it for large traces, gives the same summary as the Go parser.
func TestSummariseOnHostMatchesGo(t *testing.T) {
	needPython(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"trace.json", "trace.json.gz"} {
		path, _ := filepath.Abs("testdata/" + name)
		cfg := Complete(Config{Host: local.New(), URL: "x"})
		remote, err := summariseOnHost(ctx, cfg, path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		goSum, err := ParseTrace(open(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if !near(remote.TotalCUDAUs, goSum.TotalCUDAUs) || remote.KernelCount != goSum.KernelCount {
			t.Errorf("%s: host %v µs in %d kernels, Go %v in %d", name, remote.TotalCUDAUs, remote.KernelCount, goSum.TotalCUDAUs, goSum.KernelCount)
		}
		for c, v := range goSum.Categories {
			if !near(remote.Categories[c], v) {
				t.Errorf("%s: %s host %v Go %v", name, c, remote.Categories[c], v)
			}
		}
	}
	// A file that is not there: the script's error comes back named.
	cfg := Complete(Config{Host: local.New(), URL: "x"})
	if _, err := summariseOnHost(ctx, cfg, "/nonexistent/trace.json"); err == nil {
		t.Error("no error for a missing trace")
	}
}

// summarise picks rank 0's table first, then a rank-0 trace; it falls back
// to the trace when the table has no device time, and sends a trace larger
// than RemoteOver to the host script.
func TestSummarisePicksOutputs(t *testing.T) {
	needPython(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	copyFile := func(src, dst string) fileInfo {
		b, err := os.ReadFile("testdata/" + src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, dst)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return fileInfo{path: p, size: int64(len(b)), mtime: "1"}
	}
	table := copyFile("key_averages.txt", "profiler_out_0.txt")
	tr0 := copyFile("trace.json.gz", "dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json.gz")
	tr1 := copyFile("trace.json", "dp0_pp0_tp1_dcp0_ep0_rank1.2.pt.trace.json")
	cfg := Complete(Config{Host: local.New(), URL: "x"})
	s, err := summarise(ctx, cfg, []fileInfo{tr1, table, tr0}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if want := table.path; len(s.Source) < len(want) || s.Source[:len(want)] != want {
		t.Errorf("source %q, want the table", s.Source)
	}
	cfg.RemoteOver = 1000
	s, err = summarise(ctx, cfg, []fileInfo{tr1, tr0}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if want := tr0.path + " (trace summarised on the host"; len(s.Source) < len(want) || s.Source[:len(want)] != want {
		t.Errorf("source %q, want rank 0's trace summarised on the host", s.Source)
	}
	if !near(s.TotalCUDAUs, 785.787) {
		t.Errorf("total %v", s.TotalCUDAUs)
	}
}

// Without a working Python on the host, a large trace is streamed over the
// connection instead (cat or gzip -dc), with a note saying so.
func TestSummariseFallsBackToStreaming(t *testing.T) {
	if _, err := exec.LookPath("gzip"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gzip is needed for the streaming fallback test")
		}
		t.Skip("gzip not found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"trace.json", "trace.json.gz"} {
		path, _ := filepath.Abs("testdata/" + name)
		cfg := Complete(Config{Host: local.New(), URL: "x", Python: "python3-not-installed", RemoteOver: 1000})
		s, err := summarise(ctx, cfg, []fileInfo{{path: path, size: 1 << 20, mtime: "1"}}, func(string) {})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !near(s.TotalCUDAUs, 785.787) {
			t.Errorf("%s: total %v", name, s.TotalCUDAUs)
		}
		if len(s.Notes) == 0 || !strings.Contains(s.Notes[0], "streamed the trace") {
			t.Errorf("%s: notes %q", name, s.Notes)
		}
	}
}

// The local/remote limit holds for the decompressed bytes: a .json.gz
// smaller than RemoteOver that expands past it is summarised on the host,
// and the summary says so.
func TestSummariseSmallGzipOverLimitGoesToHost(t *testing.T) {
	needPython(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := os.ReadFile("testdata/trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rank0.trace.json.gz")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	over := int64(len(b)) + 1 // the file fits, its content does not
	if int64(len(raw)) <= over {
		t.Fatalf("the fixture compresses too little: %d of %d bytes", len(b), len(raw))
	}
	cfg := Complete(Config{Host: local.New(), URL: "x", RemoteOver: over})
	s, err := summarise(ctx, cfg, []fileInfo{{path: p, size: int64(len(b)), mtime: "1"}}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Source, "summarised on the host") || len(s.Notes) == 0 || !strings.Contains(s.Notes[0], "once decompressed") {
		t.Fatalf("source %q, notes %q: want the host's summary and a note why", s.Source, s.Notes)
	}
}
