// Package components holds the small widgets every cockpit pane draws
// with: the bar (load, progress, shares), the scrolling list bound to the
// shared list keys, and ANSI-aware truncation and padding. A pane uses
// these instead of its own copy, so a bar or a cut line looks the same on
// every pane.
package components

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Ellipsis marks where a line was cut.
const Ellipsis = "…"

// Truncate cuts s (which may hold ANSI styles) to at most w cells, marking
// a cut with "…".
func Truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return ansi.Truncate(s, w, Ellipsis)
}

// Fit cuts or pads s (which may hold ANSI styles) to exactly w cells.
func Fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = Truncate(s, w)
	if n := ansi.StringWidth(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// PadLeft right-aligns s in w cells; a longer s is returned whole.
func PadLeft(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}

// Spread lays out a title line of w cells: left at the start, right (a
// mark such as SIMULATED, may be "") against the end. When both do not
// fit, left is cut so that right stays whole.
func Spread(left, right string, w int) string {
	rw := ansi.StringWidth(right)
	if right == "" || rw+2 > w {
		return Truncate(left, w)
	}
	left = Truncate(left, w-rw-1)
	return left + strings.Repeat(" ", w-ansi.StringWidth(left)-rw) + right
}

// Width is the number of cells s takes on screen (ANSI styles take none).
func Width(s string) int { return ansi.StringWidth(s) }

// Box cuts or pads view to exactly h lines of at most w cells, so a pane
// fills the area it was given whatever it drew. A size not known yet (0)
// leaves view as drawn.
func Box(view string, w, h int) string {
	if w <= 0 || h <= 0 {
		return view
	}
	lines := strings.Split(strings.TrimRight(view, "\n"), "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			lines[i] = Truncate(l, w)
		}
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// Wrap breaks text into lines of at most w cells, at spaces where it can
// (a word longer than a line is cut across lines).
func Wrap(text string, w int) []string {
	w = max(w, 10)
	return strings.Split(ansi.Wrap(strings.Join(strings.Fields(text), " "), w, ""), "\n")
}

// WrapRows breaks text into at most rows lines of exactly w cells, so a
// verdict or a warning keeps its words on a narrow screen; text that needs
// more rows ends its last row with "…".
func WrapRows(text string, w, rows int) []string {
	if w <= 0 || rows <= 0 {
		return nil
	}
	lines := Wrap(text, w)
	if len(lines) > rows {
		lines = lines[:rows]
		last := strings.TrimRight(lines[rows-1], " ")
		if Width(last)+2 > w {
			last = ansi.Truncate(last, w-2, "") // one mark, the one below
		}
		lines[rows-1] = last + " " + Ellipsis
	}
	for i, l := range lines {
		lines[i] = Fit(l, w)
	}
	return lines
}
