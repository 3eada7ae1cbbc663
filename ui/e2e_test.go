package ui_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The end-to-end tests build the real binary, run `profdeck demo` inside a
// real tmux at 100×30, type keys and read the screen with capture-pane.

func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed; the test command installs it (apt-get install -y tmux)")
		}
		t.Skip("tmux is not installed")
	}
}

// The binary the end-to-end tests run, built by the first of them that
// needs it and shared by the rest (each test binary builds it once).
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildBinary builds profdeck once per test run; TestMain removes it.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "profdeck-e2e-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "profdeck")
		cmd := exec.Command("go", "build", "-o", built.bin, "github.com/profdeck/profdeck")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// TestMain runs the tests, then removes the binary they shared.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

type tmuxSession struct {
	t    *testing.T
	name string
	sock string
}

// startTmux runs command in a detached tmux session of the given size, on a
// private tmux server socket so the test never touches the user's tmux.
func startTmux(t *testing.T, w, h int, command string) *tmuxSession {
	t.Helper()
	s := &tmuxSession{t: t, name: fmt.Sprintf("pd%d", time.Now().UnixNano()%1e9), sock: filepath.Join(t.TempDir(), "tmux.sock")}
	// The shell prints a marker when the program ends, then keeps the pane.
	full := fmt.Sprintf("%s; rc=$?; echo; echo \"[exited $rc]\"; sleep 60", command)
	s.tmux("new-session", "-d", "-s", s.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h),
		"env", "TERM=xterm-256color", "sh", "-c", full)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	return s
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *tmuxSession) capture() string {
	return s.tmux("capture-pane", "-p", "-t", s.name)
}

func (s *tmuxSession) keys(keys ...string) {
	for _, k := range keys {
		s.tmux("send-keys", "-t", s.name, k)
		time.Sleep(150 * time.Millisecond)
	}
}

// typeText sends literal text.
func (s *tmuxSession) typeText(text string) {
	s.tmux("send-keys", "-t", s.name, "-l", text)
	time.Sleep(150 * time.Millisecond)
}

// waitFor polls the screen until re matches or the timeout passes.
func (s *tmuxSession) waitFor(re *regexp.Regexp, timeout time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var screen string
	for time.Now().Before(deadline) {
		screen = s.capture()
		if re.MatchString(screen) {
			return screen
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("screen never matched %q within %v; last screen:\n%s", re, timeout, screen)
	return ""
}

// demoLevels are the end-to-end tests' sweep levels: the demo's plateau
// (C=128, at its batch cap) is found as on the whole ladder 1…256, in half
// its levels' time.
const demoLevels = "--concurrency 1,8,128,256"

func TestEndToEndDemo(t *testing.T) {
	needTmux(t)
	t.Parallel() // beside the other long end-to-end tests: it waits on the screen, it times nothing
	bin := buildBinary(t)
	dir := t.TempDir()
	s := startTmux(t, 100, 30, fmt.Sprintf("cd %s && %s demo --manual --dir %s %s", dir, bin, dir, demoLevels))

	// Server/Load pane: eight GPU bars with GB figures, SIMULATED in the header.
	screen := s.waitFor(regexp.MustCompile(`(?s)GPU0.*GPU7`), 20*time.Second)
	s.waitFor(regexp.MustCompile(`GPU3.*\d+\.\d+/\d+\.\d+ GiB`), 15*time.Second)
	if !strings.Contains(screen, "SIMULATED") {
		t.Errorf("header does not say SIMULATED:\n%s", screen)
	}
	for _, title := range []string{"Server/Load", "Macro", "Micro", "NCCL", "Profile", "Notes"} {
		if !strings.Contains(screen, title) {
			t.Errorf("tab %q missing:\n%s", title, screen)
		}
	}

	// Macro pane: the sparklines move between two captures.
	s.keys("2")
	first := s.waitFor(regexp.MustCompile(`TPOT`), 10*time.Second)
	time.Sleep(2500 * time.Millisecond)
	second := s.capture()
	if chartLines(first) == chartLines(second) {
		t.Errorf("macro charts did not change in 2.5 s:\n%s\n---\n%s", first, second)
	}
	// The demo sweep reaches its plateau and the levels table fills.
	s.waitFor(regexp.MustCompile(`plateau at C=\d+`), 90*time.Second)
	screen = s.capture()
	if !regexp.MustCompile(`(?m)^\s*\d+\s+[\d.]+\s+[\d,.]+`).MatchString(screen) {
		t.Errorf("no levels table rows on the macro pane:\n%s", screen)
	}
	// s starts a new sweep.
	s.keys("s")
	s.waitFor(regexp.MustCompile(`(?i)running|level|C=1\b`), 10*time.Second)

	// Every pane can be reached with number keys and tab.
	for key, title := range map[string]string{"3": "Micro", "4": "NCCL", "5": "Profile", "6": "Notes", "1": "Server/Load"} {
		s.keys(key)
		s.waitFor(regexp.MustCompile(regexp.QuoteMeta(title)), 5*time.Second)
	}
	s.keys("Tab")
	s.keys("?")
	s.waitFor(regexp.MustCompile(`(?i)help`), 5*time.Second)
	s.keys("?")

	// A note typed with n is journalled and, after w, in the notebook.
	note := fmt.Sprintf("allreduce looks like half of decode %d", time.Now().Unix()%1000)
	s.keys("n")
	s.waitFor(regexp.MustCompile(`note>`), 5*time.Second)
	s.typeText(note)
	s.keys("Enter")
	s.waitFor(regexp.MustCompile(`note saved`), 5*time.Second)
	s.keys("w")
	s.waitFor(regexp.MustCompile(`notebook written`), 10*time.Second)
	nb := filepath.Join(dir, "profdeck-demo.md")
	b, err := os.ReadFile(nb)
	if err != nil {
		t.Fatalf("notebook: %v", err)
	}
	if !bytes.Contains(b, []byte(note)) {
		t.Errorf("notebook %s lacks the note %q", nb, note)
	}

	// q asks first while a phase runs; y quits; the process exits.
	s.keys("q")
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(s.capture(), "Quit anyway") {
		s.keys("y")
	}
	s.waitFor(regexp.MustCompile(`\[exited 0\]`), 10*time.Second)
}

// The demo runs the whole campaign by itself: the checklist on the Notes
// pane ticks every step, and the notebook holds the steps and the budget.
// Its sweep climbs demoLevels (the profile's levels are 1, 8 and 128 as
// after the whole ladder) and the simulated profiler flushes in 200 ms
// (3 s for each of the profile's six windows otherwise).
func TestEndToEndDemoRunsItself(t *testing.T) {
	needTmux(t)
	t.Parallel() // beside the other long end-to-end tests: it waits on the screen, it times nothing
	bin := buildBinary(t)
	dir := t.TempDir()
	s := startTmux(t, 80, 24, fmt.Sprintf("cd %s && %s demo --dir %s --load-time 4s %s --profiler-flush 200ms", dir, bin, dir, demoLevels))
	s.keys("6")
	s.waitFor(regexp.MustCompile(`Campaign steps · \d+/9 done · 1 load\(s\) · running`), 20*time.Second)
	screen := s.waitFor(regexp.MustCompile(`Campaign steps · 9/9 done · 1 load\(s\) · every step done`), 150*time.Second)
	for _, want := range []string{"✓ serve [load]", "✓ sweep", "✓ GEMMs", "✓ profile", "✓ notebook", "comm "} {
		if !strings.Contains(screen, want) {
			t.Errorf("the finished checklist lacks %q:\n%s", want, screen)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "profdeck-demo.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Campaign steps", "| 1 | leave_server | done |", "## Decode-time budget", "## Profile"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the notebook lacks %q:\n%s", want, b)
		}
	}
	s.keys("q")
	s.waitFor(regexp.MustCompile(`\[exited 0\]`), 10*time.Second)
}

func TestEndToEndStallBanner(t *testing.T) {
	needTmux(t)
	t.Parallel() // beside the other long end-to-end tests: it waits on the screen, it times nothing
	bin := buildBinary(t)
	dir := t.TempDir()
	s := startTmux(t, 100, 30, fmt.Sprintf("cd %s && %s demo --manual --dir %s --load-time 8s --stall-at 75.8 --stall-after 3s", dir, bin, dir))
	screen := s.waitFor(regexp.MustCompile(`(?i)stalled`), 40*time.Second)
	if !strings.Contains(screen, "75.8") {
		t.Errorf("stall banner does not name 75.8 GB:\n%s", screen)
	}
	s.keys("C-c")
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(s.capture(), "Quit anyway") {
		s.keys("y")
	}
	s.waitFor(regexp.MustCompile(`\[exited 0\]`), 10*time.Second)
}

func TestEndToEndTooSmall(t *testing.T) {
	needTmux(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	s := startTmux(t, 70, 20, fmt.Sprintf("cd %s && NO_COLOR=1 %s demo --manual --dir %s", dir, bin, dir))
	s.waitFor(regexp.MustCompile(`too small: have 70×20, need 80×24`), 15*time.Second)
	s.keys("q", "y")
	s.waitFor(regexp.MustCompile(`\[exited 0\]`), 10*time.Second)
}

// chartLines keeps the lines that hold block or braille chart glyphs.
func chartLines(screen string) string {
	var b strings.Builder
	for _, l := range strings.Split(screen, "\n") {
		if strings.ContainsAny(l, "▁▂▃▄▅▆▇█⣀⣤⣶⣿⡀⢀") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
