package units

import (
	"math"
	"testing"
	"time"
)

func TestFormatters(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Bytes(512), "512 B"},
		{Bytes(1536), "1.5 KiB"},
		{Bytes(64 << 10), "64 KiB"},
		{Bytes(16 << 20), "16 MiB"},
		{Bytes(1835008), "1.75 MiB"},
		{Bytes(3 << 29), "1.50 GiB"},
		{Thousands(0), "0"},
		{Thousands(999.6), "1,000"},
		{Thousands(1536), "1,536"},
		{Thousands(-1234567), "-1,234,567"},
		{Thousands(math.NaN()), Missing},
		{Int(10000000), "10,000,000"},
		{Ms(12.34), "12.3"},
		{Ms(1234.4), "1,234"},
		{Ms(math.Inf(1)), Missing},
		{Rate(99.94), "99.9"},
		{Us(812.34), "812.3µs"},
		{Us(12410), "12.41ms"},
		{Us(3.02e6), "3.02s"},
		{Pct(0.424), "42%"},
		{Pct1(0.4249), "42.5%"},
		{Pct(math.NaN()), Missing},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestDurationAndClock(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Duration(45), "45 s"},
		{Duration(75), "75 s"},
		{Duration(720), "12 min"},
		{Duration(3900), "1 h 05 min"},
		{Duration(math.NaN()), Missing},
		{ExactDuration(0), "0 s"},
		{ExactDuration(0.4), "0 s"},
		{ExactDuration(45), "45 s"},
		{ExactDuration(59.6), "1 min"},
		{ExactDuration(87), "1 min 27 s"},
		{ExactDuration(725), "12 min 05 s"},
		{ExactDuration(3599.4), "59 min 59 s"},
		{ExactDuration(3900), "1 h 05 min"},
		{ExactDuration(7200), "2 h 00 min"},
		{ExactDuration(-5), "-5 s"},
		{ExactDuration(math.Inf(1)), Missing},
		{Span(90 * time.Second), "1 min 30 s"},
		{Compact(0), "0s"},
		{Compact(41.6), "42s"},
		{Compact(59.4), "59s"},
		{Compact(59.6), "1m00s"},
		{Compact(185), "3m05s"},
		{Compact(3599.4), "59m59s"},
		{Compact(3720), "1h02m"},
		{Compact(-5), "-5s"},
		{Compact(math.NaN()), Missing},
		{Clock(0), "0:00"},
		{Clock(7400 * time.Millisecond), "0:07"},
		{Clock(725 * time.Second), "12:05"},
		{Clock(3723 * time.Second), "1:02:03"},
		{Clock(-time.Second), "0:00"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
