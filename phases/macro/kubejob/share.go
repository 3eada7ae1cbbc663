package kubejob

import (
	"errors"
	"fmt"

	"github.com/profdeck/profdeck/phases/macro/fleet"
	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// Share is the part of the sweep in spec that the pod of completion index
// shard, of shards pods, runs: split as the SSH agents' levels are
// (phases/macro/fleet): each closed-loop level's concurrency, the
// requests, the warm-up and an open loop's cap on requests in flight by
// fleet.SplitClosed, an open loop's rate by fleet.SplitRate, and a seed of
// its own. A level
// whose share is 0 is one the pod sits out. A schedule made once for all
// (gamma arrivals) and a search steered level by level are the
// coordinator's to deal over each pod's connection, not a pod's to take.
func Share(spec onhost.Spec, shard, shards int) (onhost.Spec, error) {
	switch {
	case shards < 1 || shard < 0 || shard >= shards:
		return spec, fmt.Errorf("shard %d of %d: want 0 to %d", shard, shards, shards-1)
	case spec.Search != "":
		return spec, errors.New("a search is steered level by level by the coordinator")
	case spec.Rate > 0 && spec.Burstiness != 0 && spec.Burstiness != 1:
		return spec, errors.New("gamma arrivals are scheduled once by the coordinator")
	}
	out := spec
	out.Concurrency = make([]int, len(spec.Concurrency))
	for i, c := range spec.Concurrency {
		out.Concurrency[i] = fleet.SplitClosed(c, shards)[shard]
	}
	out.Requests = fleet.SplitClosed(spec.Requests, shards)[shard]
	out.Warmup = fleet.SplitClosed(spec.Warmup, shards)[shard]
	out.MaxInFlight = fleet.SplitClosed(spec.MaxInFlight, shards)[shard]
	if spec.Rate > 0 {
		out.Rate = fleet.SplitRate(spec.Rate, shards)[shard]
	}
	out.Seed = spec.Seed + int64(shard)
	if shard != 0 {
		out.MetricsURL = ""
	}
	return out, nil
}
