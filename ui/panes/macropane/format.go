package macropane

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// thousands writes v rounded to a whole number with comma separators
// (1,536).
func thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	n := int64(math.Round(v))
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ms writes a latency in milliseconds: one decimal below 100 ms, whole
// milliseconds (with separators) above.
func ms(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return thousands(v)
	}
}

// rate writes a per-second figure: one decimal below 100, whole above.
func rate(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return thousands(v)
}

// pct writes a 0..1 fraction as a percentage.
func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }

// clock writes seconds as m:ss (or h:mm:ss).
func clock(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// fit pads or cuts s (plain text) to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) > w {
		if w == 1 {
			return "…"
		}
		return string(r[:w-1]) + "…"
	}
	return s + strings.Repeat(" ", w-len(r))
}

// padLeft right-aligns s (plain text) in w cells.
func padLeft(s string, w int) string {
	n := len([]rune(s))
	if n >= w {
		return s
	}
	return strings.Repeat(" ", w-n) + s
}
