package components

import (
	"strings"

	"charm.land/lipgloss/v2"
)

// Bar draws fractions as bars of full and empty cells.
type Bar struct {
	Full, Empty lipgloss.Style
}

// The cells a bar is drawn with.
const (
	FullCell  = "█"
	EmptyCell = "░"
)

// Cells is how many of w cells a fraction fills: rounded to the nearest
// cell, but full only at 1 and empty only at 0, so a bar never claims a
// done or untouched that is not so.
func Cells(frac float64, w int) int {
	if w <= 0 || frac != frac || frac <= 0 {
		return 0
	}
	if frac >= 1 {
		return w
	}
	n := int(frac*float64(w) + 0.5)
	return max(1, min(w-1, n))
}

// View is a bar of w cells filled to frac (0..1, clamped).
func (b Bar) View(frac float64, w int) string {
	if w <= 0 {
		return ""
	}
	n := Cells(frac, w)
	return b.Full.Render(strings.Repeat(FullCell, n)) + b.Empty.Render(strings.Repeat(EmptyCell, w-n))
}

// Count is a bar of w cells for done of total (empty when total is 0).
func (b Bar) Count(done, total, w int) string {
	if total <= 0 {
		return b.View(0, w)
	}
	return b.View(float64(done)/float64(total), w)
}
