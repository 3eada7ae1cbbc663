package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The commands the manual shows in ```sh blocks are run here, page by
// page, in a fresh folder with profdeck on PATH (and as ./profdeck), on
// the simulated host. A block that cannot run here says why on the line
// before its fence:
//
//	<!-- not run: needs a GPU host -->
//
// To keep the run short, a campaign written by `profdeck init` is given
// quick simulated settings (two levels of four requests, a 1 s load)
// before the next command reads it; what the commands print is not
// compared, only that each exits 0.

// runAsProfdeck makes the test binary profdeck itself when the scripts
// below run it (PROFDECK_TEST_AS_MAIN=1).
const runAsProfdeck = "PROFDECK_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsProfdeck) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// shBlock is one ```sh block of a page: its first line, its text, and
// the reason it is not run ("" when it is).
type shBlock struct {
	line   int
	text   string
	notRun string
}

var notRunRe = regexp.MustCompile(`^<!--\s*not run:\s*(.*?)\s*-->$`)

// shBlocks are a page's ```sh blocks in order. A not-run comment that
// stands before anything but a ```sh block is an error.
func shBlocks(page, text string) ([]shBlock, error) {
	var blocks []shBlock
	lines := strings.Split(text, "\n")
	pending, pendingLine := "", 0
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := notRunRe.FindStringSubmatch(l); m != nil {
			if m[1] == "" {
				return nil, fmt.Errorf("%s:%d: a not-run comment must say why", page, i+1)
			}
			pending, pendingLine = m[1], i+1
			continue
		}
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "```") {
			j := i + 1
			for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
				j++
			}
			if l == "```sh" {
				blocks = append(blocks, shBlock{line: i + 1, text: strings.Join(lines[i+1:min(j, len(lines))], "\n"), notRun: pending})
				pending = ""
			}
			i = j
		}
		if pending != "" {
			return nil, fmt.Errorf("%s:%d: a not-run comment stands before something other than a ```sh block", page, pendingLine)
		}
	}
	if pending != "" {
		return nil, fmt.Errorf("%s:%d: a not-run comment stands before no ```sh block", page, pendingLine)
	}
	return blocks, nil
}

// quickInit is the profdeck the scripts run: the test binary as profdeck,
// and after `init` the campaign's quick simulated settings.
const quickInit = `#!/bin/sh
PROFDECK_TEST_AS_MAIN=1 "$PROFDECK_TEST_BINARY" "$@" || exit $?
if [ "$1" = init ]; then
  f=${2:-profdeck.yaml}
  sed -i 's/^  concurrency: \[.*\]/  concurrency: [1, 2]/; s/^  batch: \[.*\]/  batch: [1, 8]/; s/^  steps: 50$/  steps: 5/; s/^macro:$/macro:\n  requests: 4\n  warmup: 1\n  output_len: 16/' "$f"
  printf 'sim:\n  load_time: 1s\n  profiler_flush: 100ms\n' >>"$f"
fi
`

func TestDocsCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the manual's commands on the simulated host (about 20 s)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "profdeck"), []byte(quickInit), 0o755); err != nil {
		t.Fatal(err)
	}
	// less pages to a terminal; here it is cat.
	if err := os.WriteFile(filepath.Join(bin, "less"), []byte("#!/bin/sh\nexec cat \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runnable := 0
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := shBlocks(page, string(b))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, bl := range blocks {
			if bl.notRun == "" {
				runnable++
			}
		}
		// Pages run side by side: each has its folder, and every simulated
		// host its own server on a loopback port of its own.
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			runPage(t, page, blocks, bin, self)
		})
	}
	if runnable == 0 {
		t.Error("no ```sh block to run")
	}
}

// runPage runs a page's blocks in order in one fresh folder.
func runPage(t *testing.T, page string, blocks []shBlock, bin, self string) {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(bin, "profdeck"), filepath.Join(dir, "profdeck")); err != nil {
		t.Fatal(err)
	}
	for _, bl := range blocks {
		if bl.notRun != "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", bl.text)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"PROFDECK_TEST_BINARY="+self, "HOME="+dir, runAsProfdeck+"=")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s:%d: the ```sh block failed (%v):\n%s\noutput:\n%s", page, bl.line, err, bl.text, out)
		}
	}
}

func TestDocsShBlocksAndTheirMarks(t *testing.T) {
	text := "# P\n\n```sh\nprofdeck version\n```\n\n<!-- not run: needs a GPU host -->\n```sh\nprofdeck micro\n```\n\n```\n$ not a block\n```\n"
	blocks, err := shBlocks("p.md", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].text != "profdeck version" || blocks[0].notRun != "" || blocks[1].notRun != "needs a GPU host" || blocks[1].line != 8 {
		t.Errorf("blocks: %+v", blocks)
	}
	for _, bad := range []string{
		"<!-- not run: x -->\nsome text\n```sh\nls\n```\n",
		"<!-- not run: x -->\n```\nls\n```\n",
		"<!-- not run: -->\n```sh\nls\n```\n",
		"text\n<!-- not run: x -->\n",
	} {
		if _, err := shBlocks("p.md", bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}
