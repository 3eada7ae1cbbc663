// Package logfield reads the numbers that engine log parsers capture from
// a line ("1,234,567 tokens", "12.5 GiB", "-1.5 GiB" of KV cache memory): a
// figure that does not read as a finite number is 0, so a garbled line
// never yields a nonsense value.
package logfield

import (
	"math"
	"strconv"
	"strings"
)

// Float reads s as a number, thousands separators allowed; 0 when it is
// not one or is not finite. A negative figure stays negative (vLLM says
// "Available KV cache memory: -1.5 GiB" when the weights leave none).
func Float(s string) float64 {
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}

// Int reads s as a whole number, thousands separators allowed; 0 when it
// is not one, is negative or does not fit in 64 bits.
func Int(s string) int64 {
	v, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}
