package macropane

import (
	"math"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/NimbleMarkets/ntcharts/v2/canvas"
	"github.com/NimbleMarkets/ntcharts/v2/sparkline"
)

// history is how many seconds of samples the pane keeps: more than the
// widest chart it draws.
const history = 512

// ring is a bounded window of per-second samples, oldest first.
type ring struct{ v []float64 }

func (r *ring) push(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		f = 0
	}
	if len(r.v) == history {
		copy(r.v, r.v[1:])
		r.v = r.v[:history-1]
	}
	r.v = append(r.v, f)
}

// last returns the newest n samples.
func (r *ring) last(n int) []float64 {
	if n >= len(r.v) {
		return r.v
	}
	return r.v[len(r.v)-n:]
}

// lastSet is the newest sample above zero (0 when there is none).
func (r *ring) lastSet() float64 {
	for i := len(r.v) - 1; i >= 0; i-- {
		if r.v[i] > 0 {
			return r.v[i]
		}
	}
	return 0
}

// rollingMax is the largest of the newest n samples (at least floor), so
// the Y range follows what is on screen and a spike scrolls away with its
// column instead of flattening the chart for good.
func (r *ring) rollingMax(n int, floor float64) float64 {
	m := floor
	for _, f := range r.last(n) {
		m = max(m, f)
	}
	return m
}

// chart is one live sparkline: a main series drawn as columns and an
// optional upper series (a p99 over a median) drawn as a tick above them.
type chart struct {
	main, upper *ring
	spark       sparkline.Model
	tickStyle   lipgloss.Style
	top         float64 // the Y range's top, the rolling max
	floor       float64
	view        string
}

func newChart(main, upper *ring, style, tick lipgloss.Style, floor float64) *chart {
	c := &chart{main: main, upper: upper, tickStyle: tick, floor: floor}
	c.spark = sparkline.New(1, 1, sparkline.WithStyle(style), sparkline.WithNoAutoMaxValue())
	return c
}

// draw refills the sparkline at w×h from the rings and caches its view.
// It runs once per batch of samples, never from View.
func (c *chart) draw(w, h int) {
	if w < 1 || h < 1 {
		c.view = ""
		return
	}
	if c.spark.Width() != w || c.spark.Height() != h {
		c.spark.Resize(w, h)
	}
	c.top = c.main.rollingMax(w, c.floor)
	if c.upper != nil {
		c.top = max(c.top, c.upper.rollingMax(w, c.floor))
	}
	c.spark.Clear()
	c.spark.SetMax(c.top)
	c.spark.PushAll(c.main.last(w))
	c.spark.Draw()
	if c.upper != nil {
		c.drawUpper(w, h)
	}
	c.view = c.spark.View()
}

// drawUpper marks each column's upper value (p99) with a tick in the first
// empty cell at its height, above the column of the main value.
func (c *chart) drawUpper(w, h int) {
	up := c.upper.last(w)
	main := c.main.last(w)
	x0 := w - len(up)
	for i, v := range up {
		// Only an upper value above the column says something.
		if v <= 0 || (i < len(main) && v <= main[i]) {
			continue
		}
		// Rows from the bottom that the value fills, in eighths.
		level := v / c.top * float64(h)
		row := h - int(math.Ceil(level))
		if row < 0 {
			row = 0
		}
		p := canvas.Point{X: x0 + i, Y: row}
		if cell := c.spark.Canvas.Cell(p); cell.Rune == 0 || cell.Rune == ' ' {
			c.spark.Canvas.SetRuneWithStyle(p, '╌', c.tickStyle)
		}
	}
}

// axis lays out labels at columns of a w-wide line; a label that would
// overlap the previous one is left out. cols must be ascending.
func axis(w int, cols []int, labels []string) string {
	line := []rune(strings.Repeat(" ", w))
	next := 0
	for i, x := range cols {
		if x < next || x >= w {
			continue
		}
		for j, r := range []rune(labels[i]) {
			if x+j >= w {
				break
			}
			line[x+j] = r
		}
		next = x + len([]rune(labels[i])) + 1
	}
	return string(line)
}
