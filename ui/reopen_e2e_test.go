package ui_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A campaign reopened in the cockpit shows what its journal holds: the
// sweep's plateau and table, the GEMMs and the collectives; the Load pane
// says the server is down (nothing runs on the fresh simulated host), and
// a sweep started then says how to start the server, at 80×24.
func TestEndToEndReopenWhereTheJournalLeftOff(t *testing.T) {
	needTmux(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	journal, err := os.ReadFile(filepath.Join("..", "report", "testdata", "seed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k.journal.jsonl"), journal, 0o644); err != nil {
		t.Fatal(err)
	}
	cf := "name: reopen\nhost: sim\nnotebook: k.md\njournal: k.journal.jsonl\n"
	if err := os.WriteFile(filepath.Join(dir, "profdeck.yaml"), []byte(cf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startTmux(t, 80, 24, fmt.Sprintf("cd %s && %s tui -c profdeck.yaml", dir, bin))
	// The simulated host's quick settings (the campaign leaves each at its
	// default), said as the cockpit opens on the status row alone, the key
	// help under it.
	screen := s.waitFor(regexp.MustCompile(`load_time 20s`), 20*time.Second)
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	if len(rows) != 24 || strings.TrimSpace(rows[22]) != "host sim quick settings: requests 16, output_len 64, warmup 2, load_time 20s" ||
		!strings.Contains(rows[23], " • ") {
		t.Errorf("the quick settings are not on the status row with the key help under them:\n%s", screen)
	}
	s.waitFor(regexp.MustCompile(`down: nothing serves`), 20*time.Second)

	s.keys("2")
	screen = s.waitFor(regexp.MustCompile(`levels done`), 10*time.Second)
	if strings.Contains(screen, "no sweep yet") || !strings.Contains(screen, "◀ plateau") {
		t.Errorf("Macro does not show the journal's sweep:\n%s", screen)
	}
	s.keys("3")
	screen = s.waitFor(regexp.MustCompile(`Micro`), 10*time.Second)
	if strings.Contains(screen, "press s") || !regexp.MustCompile(`\d+×\d+×\d+`).MatchString(screen) {
		t.Errorf("Micro does not show the journal's GEMMs:\n%s", screen)
	}
	s.keys("4")
	screen = s.waitFor(regexp.MustCompile(`NCCL`), 10*time.Second)
	if strings.Contains(screen, "press s") || !strings.Contains(screen, "All-reduce") {
		t.Errorf("NCCL does not show the journal's collectives:\n%s", screen)
	}

	// The server is down: s on Macro says how to start it, whole at 80 columns.
	s.keys("2", "s")
	s.waitFor(regexp.MustCompile(`start it in pane 1 \(press 1, then s\)`), 45*time.Second)
	s.keys("q")
	// Once the full screen closes, the quick settings are there whole, as
	// said on stderr before it opened.
	s.waitFor(regexp.MustCompile(`\[exited 0\]`), 20*time.Second)
	if joined := s.tmux("capture-pane", "-p", "-J", "-t", s.name); !strings.Contains(joined, "profdeck tui: host sim: quick settings where the campaign and the flags leave the default: "+
		"macro.requests 16, macro.output_len 64, macro.warmup 2, sim.load_time 20s") {
		t.Errorf("the quick settings are not said whole after the screen closes:\n%s", joined)
	}
}
