package macropane

import (
	"strings"
	"testing"
)

// A sweep shorter than the charts are wide is drawn wider (2 columns a
// second and up), so at 120×40 its first level starts in the charts' first
// third instead of leaving two thirds of them blank; the axis says so.
func TestChartsFillTheirWidth(t *testing.T) {
	m := newPane(t, 120, 40, false)
	replay(m, loadEvents(t), -1)
	var axis string
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.HasPrefix(l, "◂ ") {
			axis = l
		}
	}
	if !strings.Contains(axis, " cols = 1 s") {
		t.Fatalf("axis %q: one column a second", axis)
	}
	l := m.layout(len(m.banners()))
	first := len([]rune(axis[:strings.Index(axis, "┊C=1")])) - l.labelW - 1
	if first > l.chartW/3 {
		t.Errorf("the sweep starts at column %d of %d:\n%s", first, l.chartW, plain(m))
	}
}
