package headless_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

var commands = map[string]func(context.Context, []string, io.Writer, io.Writer) int{
	"sweep":   headless.SweepMain,
	"load":    headless.LoadMain,
	"micro":   headless.MicroMain,
	"nccl":    headless.NCCLMain,
	"profile": headless.ProfileMain,
	"run":     headless.RunMain,
	"tail":    headless.TailMain,
}

// baseArgs would make each command start work on the simulated host.
var baseArgs = map[string][]string{
	"sweep":   {"--host", "sim", "--url", "http://127.0.0.1:1"},
	"load":    {"--host", "sim"},
	"micro":   {"--host", "sim", "--model-config", "kimi-k2.5"},
	"nccl":    {"--host", "sim", "--model-config", "kimi-k2.5"},
	"profile": {"--host", "sim"},
	"run":     {"--host", "sim"},
	"tail":    {"--host", "sim", "/var/log/vllm/server.log"},
}

// Every command checks its output paths before any work starts: a path it
// cannot write is bad input, said in one line that names it, and nothing
// is opened (no simulated host is started).
func TestOutputPathsCheckedFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocked := filepath.Join(dir, "no-such-dir", "out.json")
	for name, main := range commands {
		for _, args := range [][]string{
			{"--json", blocked},
			{"--jsonl", blocked},
			{"--json", dir},
			{"--json", "-", "--jsonl", "-"},
		} {
			code, out, errs := runCLI(t, main, append(slices.Clone(baseArgs[name]), args...)...)
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if code != headless.ExitBadInput || len(lines) != 1 || !strings.HasPrefix(lines[0], "profdeck "+name+": --json") || out != "" {
				t.Errorf("%s %q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming the flag", name, args, code, out, errs)
			}
			if args[1] != "-" && !strings.Contains(errs, args[1]) {
				t.Errorf("%s %q: stderr %q does not name the path", name, args, errs)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the checks left files behind: %v", entries)
	}
}

// The shared flags and the usage style are the same for every command; -h
// exits 0, an unknown flag or a stray argument 2.
func TestConvention(t *testing.T) {
	t.Parallel()
	for name, main := range commands {
		code, _, errs := runCLI(t, main, "-h")
		if code != 0 || !strings.HasPrefix(errs, "usage: profdeck "+name+" ") {
			t.Errorf("%s -h: exit %d, %q", name, code, errs)
		}
		for _, flag := range []string{"-c string", "--host string", "--json string", "--jsonl string"} {
			if !strings.Contains(errs, "\n  "+flag+"\n") {
				t.Errorf("%s -h lacks %s:\n%s", name, flag, errs)
			}
		}
		// A wrong flag is one line naming it and pointing to -h, not the
		// whole help.
		if code, _, errs := runCLI(t, main, "--bogus"); code != headless.ExitBadInput || strings.Count(errs, "\n") != 1 ||
			!strings.Contains(errs, "--bogus (see profdeck "+name+" -h)") {
			t.Errorf("%s --bogus: exit %d %q", name, code, errs)
		}
		if code, _, errs := runCLI(t, main, append(slices.Clone(baseArgs[name]), "stray")...); code != headless.ExitBadInput || !strings.Contains(errs, `"stray"`) {
			t.Errorf("%s stray: exit %d %q", name, code, errs)
		}
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		writeFile(t, bad, "macro:\n  concurency: [1]\n")
		if code, _, errs := runCLI(t, main, append(slices.Clone(baseArgs[name]), "-c", bad)...); code != headless.ExitBadInput || !strings.Contains(errs, "concurency") {
			t.Errorf("%s bad campaign: exit %d %q", name, code, errs)
		}
	}
}

func TestCode(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want int
	}{
		{ctx, nil, 0},
		{ctx, errors.New("host down"), 1},
		{ctx, headless.BadInput("--url %q: not a URL", "x"), 2},
		{ctx, &headless.StepFailedError{Err: errors.New("stalled")}, 3},
		{cancelled, errors.New("cut"), 130},
		{cancelled, headless.BadInput("x"), 2},
	} {
		if got := headless.Code(c.ctx, c.err); got != c.want {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
