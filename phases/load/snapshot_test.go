package load

import (
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// TestSnapshotWhenMemoryMoves: the journalled timeline takes a snapshot
// when a GPU's memory moved 2 GiB or more since the last one, so a fast
// load is drawn in steps rather than its first and last sample.
func TestSnapshotWhenMemoryMoves(t *testing.T) {
	mib := func(xs ...float64) []phases.GPU {
		out := make([]phases.GPU, len(xs))
		for i := range xs {
			out[i] = phases.GPU{Index: i, MemoryUsedMiB: &xs[i]}
		}
		return out
	}
	for _, c := range []struct {
		last, now []phases.GPU
		want      bool
	}{
		{nil, mib(0, 0), true},
		{mib(1000, 1000), mib(1000, 3000), false},
		{mib(1000, 1000), mib(1000, 3048), true},
		{mib(5000, 5000), mib(2900, 5000), true},
		{mib(0, 0), mib(0), true},
		{mib(0), []phases.GPU{{Index: 0}}, true},
	} {
		if got := movedSince(c.last, c.now); got != c.want {
			t.Errorf("movedSince(%v, %v) = %v", c.last, c.now, got)
		}
	}
}
