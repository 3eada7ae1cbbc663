package macropane

import (
	"math"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/NimbleMarkets/ntcharts/v2/canvas/runes"
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

// chart is one live sparkline: a main series drawn as block columns (in
// eighths, with ntcharts' block runes) and an optional upper series (a p99
// over a median) drawn as a tick above them. It fills a rune grid it keeps
// and writes each run of like cells with one style sequence: ntcharts'
// sparkline model reallocates its canvas on every draw and styles every
// cell on its own, which made a 200×50 frame cost tens of milliseconds.
type chart struct {
	main, upper *ring
	pre, post   [3]string // each cell kind's style sequences, rendered once
	top         float64   // the Y range's top, the rolling max
	floor       float64
	// relative draws a column's height between the window's smallest
	// sample above zero and its top (a one-row strip then shows change,
	// not only magnitude); zero stays blank.
	relative bool
	// cols is how many columns a second takes (1 when unset): a sweep
	// shorter than the chart is drawn wider, filling it.
	cols  int
	w, h  int
	cells []rune // h rows of w cells
	kinds []byte // cellBlank, cellColumn or cellTick
	view  string
	buf   strings.Builder
}

// Cell kinds.
const (
	cellBlank byte = iota
	cellColumn
	cellTick
)

func newChart(main, upper *ring, style, tick lipgloss.Style, floor float64) *chart {
	c := &chart{main: main, upper: upper, floor: floor}
	c.pre[cellColumn], c.post[cellColumn] = wrap(style)
	c.pre[cellTick], c.post[cellTick] = wrap(tick)
	return c
}

// wrap returns what a style writes before and after its text, so runs of
// cells are styled by concatenation instead of a render call each.
func wrap(s lipgloss.Style) (pre, post string) {
	const mark = "\uE000"
	out := s.Render(mark)
	i := strings.Index(out, mark)
	if i < 0 {
		return "", ""
	}
	return out[:i], out[i+len(mark):]
}

// draw redraws the chart at w×h from the rings and caches its view. It
// runs once per batch of samples, never from View.
func (c *chart) draw(w, h int) {
	if w < 1 || h < 1 {
		c.view = ""
		return
	}
	if c.w != w || c.h != h {
		c.w, c.h = w, h
		c.cells = make([]rune, w*h)
		c.kinds = make([]byte, w*h)
	}
	for i := range c.cells {
		c.cells[i], c.kinds[i] = ' ', cellBlank
	}
	cols := max(1, c.cols)
	n := w / cols // seconds on screen
	c.top = c.main.rollingMax(n, c.floor)
	if c.upper != nil {
		c.top = max(c.top, c.upper.rollingMax(n, c.floor))
	}
	vals := c.main.last(n)
	x0 := w - len(vals)*cols
	lo := 0.0
	if c.relative {
		lo = minAbove0(vals)
	}
	for i, v := range vals {
		rows := v / c.top * float64(h) // column height in rows
		if c.relative && v > 0 {
			rows = float64(h) * (1 + 7*(v-lo)/max(c.top-lo, 1e-9)) / 8
		}
		for j := 0; j < h && float64(j) < rows; j++ {
			r := runes.FullBlock
			if rows-float64(j) < 1 {
				r = runes.LowerBlockElementFromFloat64(rows - float64(j))
			}
			if r == runes.Null {
				break
			}
			for q := range cols {
				k := (h-1-j)*w + x0 + i*cols + q
				c.cells[k], c.kinds[k] = r, cellColumn
			}
		}
	}
	if c.upper != nil {
		c.drawUpper(w, h, n, vals)
	}
	c.view = c.serialize()
}

// drawUpper marks each column's upper value (p99) with a tick in the cell
// at its height, when that cell is above the column.
func (c *chart) drawUpper(w, h, n int, main []float64) {
	cols := max(1, c.cols)
	up := c.upper.last(n)
	x0 := w - len(up)*cols
	for i, v := range up {
		// Only an upper value above the column says something.
		if v <= 0 || (i < len(main) && v <= main[i]) {
			continue
		}
		row := max(0, h-int(math.Ceil(v/c.top*float64(h))))
		for q := range cols {
			if k := row*w + x0 + i*cols + q; c.kinds[k] == cellBlank {
				c.cells[k], c.kinds[k] = '╌', cellTick
			}
		}
	}
}

// serialize writes the grid, one style sequence per run of like cells,
// blanks unstyled.
func (c *chart) serialize() string {
	c.buf.Reset()
	c.buf.Grow(c.w * c.h * 4)
	for y := 0; y < c.h; y++ {
		if y > 0 {
			c.buf.WriteByte('\n')
		}
		row := y * c.w
		for x := 0; x < c.w; {
			k := c.kinds[row+x]
			c.buf.WriteString(c.pre[k])
			for ; x < c.w && c.kinds[row+x] == k; x++ {
				c.buf.WriteRune(c.cells[row+x])
			}
			c.buf.WriteString(c.post[k])
		}
	}
	return c.buf.String()
}

// minAbove0 is the smallest value above zero (0 when there is none).
func minAbove0(vals []float64) float64 {
	lo := 0.0
	for _, v := range vals {
		if v > 0 && (lo == 0 || v < lo) {
			lo = v
		}
	}
	return lo
}
