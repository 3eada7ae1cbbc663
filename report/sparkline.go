package report

import (
	"math"
	"strings"
)

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws vals as a line of block characters scaled from 0 to the
// largest value (NaN and negative values draw as a space). More values than
// width are bucketed, each bucket showing its largest value.
func Sparkline(vals []float64, width int) string {
	if width <= 0 || len(vals) == 0 {
		return ""
	}
	if len(vals) > width {
		vals = bucketMax(vals, width)
	}
	top := 0.0
	for _, v := range vals {
		if !math.IsNaN(v) && v > top {
			top = v
		}
	}
	var b strings.Builder
	for _, v := range vals {
		switch {
		case math.IsNaN(v) || v < 0:
			b.WriteRune(' ')
		case top == 0:
			b.WriteRune(sparkRunes[0])
		default:
			i := int(math.Round(v / top * float64(len(sparkRunes)-1)))
			b.WriteRune(sparkRunes[min(max(i, 0), len(sparkRunes)-1)])
		}
	}
	return b.String()
}

// bucketMax shrinks vals to n values, each the maximum of its bucket.
func bucketMax(vals []float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		lo := i * len(vals) / n
		hi := (i + 1) * len(vals) / n
		m := math.NaN()
		for _, v := range vals[lo:hi] {
			if math.IsNaN(m) || v > m {
				m = v
			}
		}
		out[i] = m
	}
	return out
}
