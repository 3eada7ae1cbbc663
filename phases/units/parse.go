package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseInts reads a comma-separated list of whole numbers such as
// "1, 8,64" (the concurrency levels and batch sizes the operator types):
// each within [lo, hi], none given twice, at least one. Empty items are
// skipped. The error names the item at fault, not the flag or key: the
// caller adds that.
func ParseInts(s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				if strings.HasPrefix(f, "-") {
					return nil, fmt.Errorf("%.40s is less than %d", f, lo)
				}
				return nil, fmt.Errorf("%.40s is more than %d", f, hi)
			}
			return nil, fmt.Errorf("%.40q is not a whole number", f)
		}
		out = append(out, n)
		if len(out) > maxListLen {
			break // CheckInts names the length
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no value (e.g. 1,8,64)")
	}
	if err := CheckInts(out, lo, hi); err != nil {
		return nil, err
	}
	return out, nil
}

// maxListLen bounds a list of levels or batch sizes: each item is a run of
// its own, so a longer list is a mistake, not a plan.
const maxListLen = 1000

// CheckInts checks a list of whole numbers as ParseInts does (each within
// [lo, hi], none twice, at most a thousand); an empty list passes (the
// caller decides whether one is needed).
func CheckInts(list []int, lo, hi int) error {
	if len(list) > maxListLen {
		return fmt.Errorf("%d values: at most %d", len(list), maxListLen)
	}
	seen := make(map[int]bool, len(list))
	for _, n := range list {
		switch {
		case n < lo:
			return fmt.Errorf("%d is less than %d", n, lo)
		case n > hi:
			return fmt.Errorf("%d is more than %d", n, hi)
		case seen[n]:
			return fmt.Errorf("%d is given twice", n)
		}
		seen[n] = true
	}
	return nil
}

// CheckFloat checks a number the operator gave: finite (not NaN or ±Inf,
// which strconv and YAML both accept) and within [lo, hi].
func CheckFloat(x, lo, hi float64) error {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Errorf("%g is not a number: want a finite value from %g to %g", x, lo, hi)
	case x < lo || x > hi:
		return fmt.Errorf("%g is out of range: want %g to %g", x, lo, hi)
	}
	return nil
}
