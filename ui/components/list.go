package components

import (
	tea "charm.land/bubbletea/v2"

	"github.com/profdeck/profdeck/ui/common"
)

// List is the scroll position of a list of Len rows shown Rows at a time,
// moved by the shared list keys (KeyMap.Scroll). The zero value shows the
// top of the list; with FromEnd it follows the end (the newest rows), and
// Offset counts rows scrolled back from there.
type List struct {
	FromEnd bool
	Offset  int
	n, rows int
}

// SetSize sets the list's length and the rows that show, and keeps the
// offset inside them.
func (l *List) SetSize(n, rows int) {
	l.n, l.rows = max(0, n), max(0, rows)
	l.clamp()
}

// Reset goes back to the start (the end, with FromEnd).
func (l *List) Reset() { l.Offset = 0 }

func (l *List) clamp() { l.Offset = max(0, min(l.Offset, l.n-l.rows)) }

// Page is what ctrl+d and ctrl+u move: half the rows that show.
func (l *List) Page() int { return max(1, l.rows/2) }

// Key moves the list for a list key (j/k, ctrl+d/u, g/G and their
// arrows); it reports whether msg was one.
func (l *List) Key(k *common.KeyMap, msg tea.KeyPressMsg) bool {
	step, ok := k.Scroll(msg, l.Page())
	if !ok {
		return false
	}
	if l.FromEnd {
		step = -step
	}
	l.Offset = max(0, min(l.Offset+min(max(step, -l.n), l.n), l.n))
	l.clamp()
	return true
}

// Visible is the rows that show now: [first, end).
func (l *List) Visible() (first, end int) {
	if l.FromEnd {
		end = l.n - l.Offset
		return max(0, end-l.rows), end
	}
	return l.Offset, min(l.n, l.Offset+l.rows)
}

// Clipped reports whether some rows do not show.
func (l *List) Clipped() bool { return l.n > l.rows }
