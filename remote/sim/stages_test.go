package sim_test

import (
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/sim"
)

// TestStageNames holds the simulator's stage names to the engine's.
func TestStageNames(t *testing.T) {
	for _, c := range [][2]string{
		{sim.StageStarting, phases.StageStarting}, {sim.StageWeights, phases.StageWeights},
		{sim.StageCompile, phases.StageCompile}, {sim.StageKVCache, phases.StageKVCache},
		{sim.StageCUDAGraphs, phases.StageCUDAGraphs}, {sim.StageReady, phases.StageReady},
		{sim.StageFailed, phases.StageFailed}, {sim.StageStopped, phases.StageStopped},
	} {
		if c[0] != c[1] {
			t.Errorf("sim stage %q, engine stage %q", c[0], c[1])
		}
	}
}
