package components

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/profdeck/profdeck/ui/common"
)

func TestFitAndTruncateCountCellsNotBytes(t *testing.T) {
	styled := lipgloss.NewStyle().Bold(true).Render("µs–ÜÜ")
	if got := Width(Fit(styled, 8)); got != 8 {
		t.Errorf("Fit pads to %d cells", got)
	}
	if got := Truncate(styled, 3); Width(got) != 3 || !strings.HasSuffix(strings.TrimRight(got, "\x1b[0m"), Ellipsis) {
		t.Errorf("Truncate(3) = %q", got)
	}
	if Fit("abc", 0) != "" || Truncate("abc", -1) != "" {
		t.Error("zero width is not empty")
	}
	if PadLeft("12", 5) != "   12" || PadLeft("123456", 3) != "123456" {
		t.Error("PadLeft")
	}
}

func TestBarNeverClaimsDoneOrUntouched(t *testing.T) {
	b := Bar{}
	for _, c := range []struct {
		frac float64
		w    int
		full int
	}{{0, 10, 0}, {0.01, 10, 1}, {0.5, 10, 5}, {0.99, 10, 9}, {1, 10, 10}, {2, 10, 10}, {-1, 10, 0}} {
		v := b.View(c.frac, c.w)
		if n := strings.Count(v, FullCell); n != c.full || Width(v) != c.w {
			t.Errorf("View(%v, %d) = %q: %d full", c.frac, c.w, v, n)
		}
	}
	if v := b.Count(3, 0, 4); v != strings.Repeat(EmptyCell, 4) {
		t.Errorf("Count of nothing = %q", v)
	}
	if v := b.Count(1, 2, 4); strings.Count(v, FullCell) != 2 {
		t.Errorf("Count(1,2) = %q", v)
	}
}

func press(l *List, k string) bool {
	var msg tea.KeyPressMsg
	switch k {
	case "ctrl+d":
		msg = tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
	default:
		msg = tea.KeyPressMsg{Code: rune(k[0]), Text: k}
	}
	return l.Key(common.DefaultKeyMap(), msg)
}

func TestListFromTheTop(t *testing.T) {
	var l List
	l.SetSize(10, 4)
	if f, e := l.Visible(); f != 0 || e != 4 {
		t.Fatalf("window %d–%d", f, e)
	}
	press(&l, "j")
	press(&l, "ctrl+d")
	if f, _ := l.Visible(); f != 3 {
		t.Errorf("j then ctrl+d: first %d, want 3", f)
	}
	press(&l, "G")
	if f, e := l.Visible(); f != 6 || e != 10 {
		t.Errorf("G: %d–%d", f, e)
	}
	press(&l, "g")
	if l.Offset != 0 {
		t.Errorf("g: offset %d", l.Offset)
	}
	if press(&l, "x") {
		t.Error("x is no list key")
	}
	l.SetSize(2, 4)
	if l.Clipped() || l.Offset != 0 {
		t.Error("a short list scrolls")
	}
}

func TestListFromTheEndFollowsTheNewest(t *testing.T) {
	l := List{FromEnd: true}
	l.SetSize(10, 4)
	if f, e := l.Visible(); f != 6 || e != 10 {
		t.Fatalf("window %d–%d", f, e)
	}
	press(&l, "k")
	if f, e := l.Visible(); f != 5 || e != 9 {
		t.Errorf("k: %d–%d", f, e)
	}
	press(&l, "g")
	if f, e := l.Visible(); f != 0 || e != 4 {
		t.Errorf("g: %d–%d", f, e)
	}
	press(&l, "G")
	if l.Offset != 0 {
		t.Errorf("G: offset %d", l.Offset)
	}
}

func TestWrap(t *testing.T) {
	got := Wrap("the GPUs are busy:   1 process holds 76.0 GiB", 20)
	want := []string{"the GPUs are busy: 1", "process holds 76.0", "GiB"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Wrap = %q", got)
	}
	for _, l := range Wrap(strings.Repeat("x", 25)+" y", 10) {
		if Width(l) > 10 {
			t.Errorf("line %q wider than 10", l)
		}
	}
}

// Spread puts the mark against the end of the line and cuts the title,
// never the mark, when both do not fit.
func TestSpread(t *testing.T) {
	for _, c := range []struct {
		left, right string
		w           int
		want        string
	}{
		{"Micro", "SIM", 12, "Micro    SIM"},
		{"Micro · decode", "SIM", 12, "Micro ·… SIM"},
		{"Micro", "", 12, "Micro"},
		{"Micro", "SIMULATED", 10, "Micro"},
	} {
		if got := Spread(c.left, c.right, c.w); got != c.want {
			t.Errorf("Spread(%q, %q, %d) = %q, want %q", c.left, c.right, c.w, got, c.want)
		}
	}
}

func TestWrapRowsKeepsTheWordsOnTwoRows(t *testing.T) {
	text := "raise --max-num-seqs: the engine's running requests stop at 64, not set at launch"
	got := WrapRows(text, 40, 2)
	if len(got) != 2 {
		t.Fatalf("rows = %d, want 2: %q", len(got), got)
	}
	for _, l := range got {
		if Width(l) != 40 {
			t.Fatalf("row %q is %d cells, want 40", l, Width(l))
		}
	}
	if !strings.Contains(got[0], "raise --max-num-seqs") || strings.Contains(got[0], "…") {
		t.Fatalf("first row cut: %q", got[0])
	}
	if !strings.Contains(got[1], "…") {
		t.Fatalf("text longer than two rows must end in …: %q", got[1])
	}
	// A word longer than a row fills it: the cut is still marked once.
	long := WrapRows("lost: Get http://127.0.0.1:8000/v1/models/"+strings.Repeat("x", 80)+" refused", 40, 2)
	if n := strings.Count(strings.Join(long, ""), "…"); n != 1 {
		t.Fatalf("%d marks of the cut, want 1: %q", n, long)
	}
	if one := WrapRows("short", 40, 2); len(one) != 1 {
		t.Fatalf("short text takes %d rows, want 1", len(one))
	}
}

// A line of figures too wide for its cells takes the short labels first,
// then leaves out the least useful figures, lowest rank first and of equal
// rank the latest, keeping the order of the rest.
func TestFieldsDropTheLeastUsefulFirst(t *testing.T) {
	fields := []Field{
		{Text: "running 256", Short: "run 256", Rank: 6},
		{Text: "KV 97%", Rank: 5},
		{Text: "gen 12,345 tok/s", Rank: 1},
		{Text: "prefix hit 45%", Rank: 4},
		{Text: "spec 70%", Rank: 3},
		{Text: "2 engines", Rank: 3},
	}
	for _, tc := range []struct {
		w    int
		want string
	}{
		{200, "running 256 · KV 97% · gen 12,345 tok/s · prefix hit 45% · spec 70% · 2 engines"},
		{78, "run 256 · KV 97% · gen 12,345 tok/s · prefix hit 45% · spec 70% · 2 engines"},
		{60, "run 256 · KV 97% · prefix hit 45% · spec 70% · 2 engines"},
		{45, "run 256 · KV 97% · prefix hit 45% · spec 70%"},
		{33, "run 256 · KV 97% · prefix hit 45%"},
		{20, "run 256 · KV 97%"},
		{5, "run …"},
		{0, ""},
	} {
		if got := Fields(fields, " · ", tc.w); got != tc.want || Width(got) > max(tc.w, 0) {
			t.Errorf("w=%d: %q, want %q", tc.w, got, tc.want)
		}
	}
}
