package report

import (
	"fmt"
	"math"

	"github.com/profdeck/profdeck/phases"
)

// maxReplicaGPUs bounds one replica's GPUs (TP × PP × DP): past it the
// figures are no deployment's, and the products that count a plan's GPUs
// would overflow.
const maxReplicaGPUs = 1 << 20

// checkLevels refuses a level whose figures no server measured: a
// throughput or a latency that is negative or not finite (a hand-edited or
// damaged document). The error names the level and the field.
func checkLevels(levels []phases.LevelResult, unit string) error {
	for _, l := range levels {
		for _, f := range []struct {
			name string
			v    float64
		}{{"request_throughput", l.RequestThroughput}, {"output_throughput", l.OutputThroughput},
			{"mean_e2el_ms", l.MeanE2ELms}, {"request_rate", l.Rate}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
				return fmt.Errorf("%s: %s %g is not a measured figure (want a finite number, 0 or more)", loadName(loadOf(l, unit), unit), f.name, f.v)
			}
		}
	}
	return nil
}

// checkDeployment refuses a replica that cannot be: TP not positive, PP,
// DP or nodes negative, more GPUs than maxReplicaGPUs (checked, never
// wrapped round), or more nodes than GPUs. where names its source.
func checkDeployment(d phases.Deployment, where string) error {
	switch {
	case d.TP <= 0:
		return fmt.Errorf("%s: TP %d is not a tensor-parallel size (want 1 or more)", where, d.TP)
	case d.PP < 0 || d.DP < 0:
		return fmt.Errorf("%s: PP %d, DP %d: want 1 or more (0: not given)", where, d.PP, d.DP)
	case d.Nodes < 0:
		return fmt.Errorf("%s: %d nodes: want 1 or more", where, d.Nodes)
	}
	g, ok := 1, true
	for _, v := range []int{d.TP, max(d.PP, 1), max(d.DP, 1)} {
		if v > maxReplicaGPUs || g > maxReplicaGPUs/v {
			ok = false
			break
		}
		g *= v
	}
	if !ok {
		return fmt.Errorf("%s: %s is more than %d GPUs for one replica", where, parallelText(d), maxReplicaGPUs)
	}
	if d.Nodes > g {
		return fmt.Errorf("%s: one replica of %d GPUs (%s) cannot span %d nodes: each node would hold less than one GPU", where, g, parallelText(d), d.Nodes)
	}
	return nil
}
