package logfield

import (
	"math"
	"testing"
)

func TestFloatAndInt(t *testing.T) {
	for _, c := range []struct {
		in string
		f  float64
		i  int64
	}{
		{"12.5", 12.5, 0},
		{"1,234,567", 1234567, 1234567},
		{"42", 42, 42},
		{"", 0, 0},
		{"x", 0, 0},
		{"-3", -3, 0},
		{"-1.5", -1.5, 0},
		{"1e400", 0, 0},
		{"NaN", 0, 0},
		{"99999999999999999999", 1e20, 0},
	} {
		if f, i := Float(c.in), Int(c.in); f != c.f || i != c.i {
			t.Errorf("%q: Float %v Int %v, want %v %v", c.in, f, i, c.f, c.i)
		}
	}
}

func FuzzFloatAndInt(f *testing.F) {
	f.Add("1,234.5")
	f.Fuzz(func(t *testing.T, s string) {
		if v := Float(s); math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("Float(%q) = %v", s, v)
		}
		if v := Int(s); v < 0 {
			t.Fatalf("Int(%q) = %v", s, v)
		}
	})
}
