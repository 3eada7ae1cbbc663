package units

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseInts(t *testing.T) {
	if v, err := ParseInts(" 1, 8,64 ,", 1, 100); err != nil || !reflect.DeepEqual(v, []int{1, 8, 64}) {
		t.Errorf("%v %v", v, err)
	}
	for in, want := range map[string]string{
		"":                      "no value",
		" , ":                   "no value",
		"0":                     "0 is less than 1",
		"1,-2":                  "-2 is less than 1",
		"x":                     `"x" is not a whole number`,
		"1.5":                   `"1.5" is not a whole number`,
		"1e8":                   `"1e8" is not a whole number`,
		"101":                   "101 is more than 100",
		"1,1":                   "1 is given twice",
		"99999999999999999999":  "99999999999999999999 is more than 100",
		"-99999999999999999999": "-99999999999999999999 is less than 1",
	} {
		_, err := ParseInts(in, 1, 100)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	long := strings.Repeat("1,", 5000)
	if _, err := ParseInts(long, 1, 100); err == nil || !strings.Contains(err.Error(), "at most 1000") {
		t.Errorf("a list of 5000: %v", err)
	}
}

func TestCheckFloat(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 11} {
		if CheckFloat(x, 0, 10) == nil {
			t.Errorf("%g accepted in [0, 10]", x)
		}
	}
	for _, x := range []float64{0, 10, 5.5} {
		if err := CheckFloat(x, 0, 10); err != nil {
			t.Errorf("%g: %v", x, err)
		}
	}
}

// FuzzParseInts: any text is refused with an error or gives a list whose
// every value is in range and given once, and which reads back the same.
func FuzzParseInts(f *testing.F) {
	for _, s := range []string{"1,2,4,8", " 1, 8,64 ,", "0", "-1", "1,1", "1e8", "NaN", "+5", "0x10", "007", "", ",,,", "1,,2", "99999999999999999999", "1\x002", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseInts(s, 1, 4096)
		if err != nil {
			if v != nil {
				t.Fatalf("%q: values %v with the error %v", s, v, err)
			}
			return
		}
		if len(v) == 0 || len(v) > maxListLen {
			t.Fatalf("%q: %d values", s, len(v))
		}
		seen := map[int]bool{}
		parts := make([]string, len(v))
		for i, n := range v {
			if n < 1 || n > 4096 || seen[n] {
				t.Fatalf("%q: %v", s, v)
			}
			seen[n] = true
			parts[i] = strconv.Itoa(n)
		}
		if w, err := ParseInts(strings.Join(parts, ","), 1, 4096); err != nil || !reflect.DeepEqual(v, w) {
			t.Fatalf("%q: %v does not read back (%v, %v)", s, v, w, err)
		}
	})
}

// FuzzCheckFloat: an accepted value is finite and in range.
func FuzzCheckFloat(f *testing.F) {
	for _, x := range []float64{0, 1, -1, math.NaN(), math.Inf(1), math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		if CheckFloat(x, 0, 1e5) == nil && (math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > 1e5) {
			t.Fatalf("%g accepted", x)
		}
	})
}
