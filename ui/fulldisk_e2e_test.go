package ui_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/localfs/smalldisk"
)

// The cockpit's journal on a full disk (the demo's folder on a 48 KiB
// tmpfs): the Notes pane says the journal is not written, the phases stop,
// and the cockpit exits 3 saying so.
func TestEndToEndJournalOnFullDisk(t *testing.T) {
	needTmux(t)
	bin := buildBinary(t)
	dir := smalldisk.Mount(t, 48<<10)
	s := startTmux(t, 100, 30, fmt.Sprintf("cd %s && %s demo --dir %s --load-time 4s; echo \"[code $?]\"", t.TempDir(), bin, dir))
	s.keys("6")
	s.waitFor(regexp.MustCompile(`journal not written`), 150*time.Second)
	s.keys("q")
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(s.capture(), "Quit anyway") {
		s.keys("y")
	}
	s.waitFor(regexp.MustCompile(`\[code 3\]`), 20*time.Second)
}
