package load

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
)

// StallText is the one-line story of a stall, e.g.
// "STALLED at 75.8 GiB on GPUs 0-7 for 12 min".
func StallText(s *phases.Stall) string {
	dur := FormatDuration(s.ForS)
	if len(s.GPUs) == 0 {
		return fmt.Sprintf("STALLED: no progress for %s (no GPU memory readings)", dur)
	}
	lo, hi := s.MemoryGiB[0], s.MemoryGiB[0]
	for _, m := range s.MemoryGiB {
		lo, hi = min(lo, m), max(hi, m)
	}
	if hi-lo <= 0.15 {
		return fmt.Sprintf("STALLED at %.1f GiB on %s for %s", hi, GPUList(s.GPUs), dur)
	}
	return fmt.Sprintf("STALLED at %.1f–%.1f GiB on %s for %s", lo, hi, GPUList(s.GPUs), dur)
}

// GPUList writes GPU indices compactly: "GPU 3", "GPUs 0-7", "GPUs 0-2,5".
func GPUList(idx []int) string {
	if len(idx) == 1 {
		return fmt.Sprintf("GPU %d", idx[0])
	}
	out := "GPUs "
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if i > 0 {
			out += ","
		}
		if j > i {
			out += fmt.Sprintf("%d-%d", idx[i], idx[j])
		} else {
			out += fmt.Sprintf("%d", idx[i])
		}
		i = j + 1
	}
	return out
}

// FormatDuration writes seconds as "45 s", "12 min", "1 h 05 min".
func FormatDuration(s float64) string {
	switch {
	case s < 90:
		return fmt.Sprintf("%.0f s", s)
	case s < 3600:
		return fmt.Sprintf("%.0f min", s/60)
	}
	return fmt.Sprintf("%d h %02d min", int(s)/3600, (int(s)%3600)/60)
}
