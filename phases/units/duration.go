package units

import (
	"fmt"
	"math"
	"time"
)

// Duration writes a span of seconds in words, as a live figure or an
// estimate reads: whole seconds below 90 s, whole minutes below an hour,
// then hours and minutes: "45 s", "12 min", "1 h 05 min". Load stages and
// ETAs read this way.
func Duration(sec float64) string {
	if bad(sec) {
		return Missing
	}
	switch {
	case sec < 90:
		return fmt.Sprintf("%.0f s", sec)
	case sec < 3600:
		return fmt.Sprintf("%.0f min", sec/60)
	}
	return hoursMinutes(int64(sec))
}

// ExactDuration writes a measured span of seconds in the same words, to
// the second below an hour and leaving out a zero tail: "0 s", "45 s",
// "12 min", "12 min 05 s", "1 h 05 min". Phase and step durations in the
// notebook and the steps table read this way.
func ExactDuration(sec float64) string {
	return signed(sec, func(s int64) string {
		switch {
		case s < 60:
			return fmt.Sprintf("%d s", s)
		case s >= 3600:
			return hoursMinutes(s)
		case s%60 == 0:
			return fmt.Sprintf("%d min", s/60)
		}
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	})
}

// Compact writes a span of seconds in the fewest characters, to the second
// below an hour: "42s", "3m05s", "1h02m". Progress lines on stderr, where a
// line has many figures, read this way.
func Compact(sec float64) string {
	return signed(sec, func(s int64) string {
		switch {
		case s < 60:
			return fmt.Sprintf("%ds", s)
		case s < 3600:
			return fmt.Sprintf("%dm%02ds", s/60, s%60)
		}
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	})
}

// signed writes a span of seconds with write, which is given its size in
// whole seconds: a minus before a negative one, Missing for NaN or ±Inf.
func signed(sec float64, write func(s int64) string) string {
	if bad(sec) {
		return Missing
	}
	neg := ""
	if sec < 0 {
		neg, sec = "-", -sec
	}
	return neg + write(int64(math.Round(sec)))
}

func hoursMinutes(s int64) string {
	return fmt.Sprintf("%d h %02d min", s/3600, s%3600/60)
}

// Span is ExactDuration of a time.Duration.
func Span(d time.Duration) string { return ExactDuration(d.Seconds()) }

// Clock writes an elapsed time as a stopwatch does, to the second: "0:07",
// "12:05", "1:02:03".
func Clock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s%3600/60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
