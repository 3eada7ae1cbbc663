// Package panetest is what every pane's tests share: the boxes a pane must
// exactly fill, golden views, key presses run to their end with the
// session's events fed back as the root does, deps on the simulated
// deployment, and the run flows of the GPU panes (cancel, busy GPUs). Only
// tests import it.
package panetest

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/ui/common"
)

var update = flag.Bool("update", false, "rewrite the golden views")

// Boxes are the content areas a pane gets on an 80×24 and a 120×40 screen.
var Boxes = [][2]int{{80, 24 - common.ChromeRows}, {120, 40 - common.ChromeRows}}

// Fits fails t unless view is exactly h lines, none wider than w cells.
func Fits(t testing.TB, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Errorf("%d×%d: %d lines, want %d:\n%s", w, h, len(lines), h, ansi.Strip(view))
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("%d×%d: line %d is %d cells wide: %q", w, h, i, n, ansi.Strip(l))
		}
	}
}

// FitsBoxes sizes c to each of Boxes and checks that its view fills it;
// it leaves c at the last box.
func FitsBoxes(t testing.TB, c common.Component) {
	t.Helper()
	for _, b := range Boxes {
		c.SetSize(b[0], b[1])
		Fits(t, c.View(), b[0], b[1])
	}
}

// Plain is view without its styles, trailing blanks cut from each line.
func Plain(view string) string {
	lines := strings.Split(ansi.Strip(view), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// Golden compares the plain view with testdata/NAME.golden; -update
// rewrites the file.
func Golden(t testing.TB, name, view string) {
	t.Helper()
	got := Plain(view) + "\n"
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with go test -run %s -update)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("view differs from %s (rewrite with -update if intended):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Key is the press of a key: one letter, or enter, esc, tab, ctrl+c.
func Key(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "ctrl+c", "ctrl+d", "ctrl+u":
		return tea.KeyPressMsg{Code: rune(k[5]), Mod: tea.ModCtrl}
	}
	return tea.KeyPressMsg{Code: rune(k[0]), Text: k}
}

// ReadJSON decodes the JSON file at path (a result kept in an engine's
// testdata) into v.
func ReadJSON(t testing.TB, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Shows fails t for each of wants that view (styles stripped) lacks.
func Shows(t testing.TB, view string, wants ...string) {
	t.Helper()
	plain := ansi.Strip(view)
	for _, w := range wants {
		if !strings.Contains(plain, w) {
			t.Errorf("view lacks %q:\n%s", w, plain)
		}
	}
}
