// Package units writes the figures every part of profdeck shows the same
// way: byte counts, latencies in µs and ms, whole numbers with thousands
// separators, rates and percentages. The engines' printed lines, the
// cockpit's panes and the notebook all use it, so one number never reads
// two ways.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Missing is what a figure that is not a number (NaN, ±Inf) prints as.
const Missing = "—"

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// Bytes writes a byte count in binary units, whole when exact: "512 B",
// "64 KiB", "1.5 KiB", "16 MiB", "1.75 MiB", "1.50 GiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return inUnit(n, 1<<30, "GiB", 2)
	case n >= 1<<20:
		return inUnit(n, 1<<20, "MiB", 2)
	case n >= 1<<10:
		return inUnit(n, 1<<10, "KiB", 1)
	}
	return fmt.Sprintf("%d B", n)
}

func inUnit(n, unit int64, name string, prec int) string {
	if n%unit == 0 {
		return fmt.Sprintf("%d %s", n/unit, name)
	}
	return strconv.FormatFloat(float64(n)/float64(unit), 'f', prec, 64) + " " + name
}

// Thousands writes v rounded to a whole number with comma separators
// ("1,536").
func Thousands(v float64) string {
	if bad(v) {
		return Missing
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

// Int writes a whole number with comma separators.
func Int(n int64) string { return Thousands(float64(n)) }

// Ms writes a latency in milliseconds without the unit: one decimal below
// 100 ms, whole milliseconds (with separators) above.
func Ms(v float64) string {
	switch {
	case bad(v):
		return Missing
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return Thousands(v)
}

// Rate writes a per-second figure without the unit: one decimal below 100,
// whole (with separators) above.
func Rate(v float64) string { return Ms(v) }

// Us writes a duration given in microseconds with its unit: "812.3µs",
// "12.41ms", "3.02s".
func Us(v float64) string {
	switch {
	case bad(v):
		return Missing
	case v >= 1e6:
		return fmt.Sprintf("%.2fs", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.2fms", v/1e3)
	}
	return fmt.Sprintf("%.1fµs", v)
}

// Pct writes a fraction (0..1) as a whole percentage: "42%".
func Pct(frac float64) string {
	if bad(frac) {
		return Missing
	}
	return strconv.FormatFloat(100*frac, 'f', 0, 64) + "%"
}

// Pct1 writes a fraction (0..1) as a percentage with one decimal: "42.5%".
func Pct1(frac float64) string {
	if bad(frac) {
		return Missing
	}
	return strconv.FormatFloat(100*frac, 'f', 1, 64) + "%"
}
