package campaignrun

import (
	"reflect"
	"testing"
)

// In the one-load order micro and NCCL run before the sweep: a plateau the
// sweep finds can only send the profile back, never the steps behind it.
func TestStepsAfterTheSweep(t *testing.T) {
	oneLoad := []string{Doctor, FreeGPUs, Micro, NCCL, Serve, Macro, Profile, LeaveServer, Notebook}
	classic := []string{Doctor, Serve, Macro, FreeGPUs, Micro, NCCL, Restart, Profile, LeaveServer, Notebook}
	if got := stepsAfter(oneLoad, Macro, sweepSteps); !reflect.DeepEqual(got, []string{Profile}) {
		t.Errorf("one-load: %v, want [profile]", got)
	}
	if got := stepsAfter(classic, Macro, sweepSteps); !reflect.DeepEqual(got, []string{Micro, NCCL, Profile}) {
		t.Errorf("classic: %v, want [micro nccl profile]", got)
	}
	if got := stepsAfter([]string{Micro}, Macro, sweepSteps); got != nil {
		t.Errorf("no sweep in the plan: %v, want none", got)
	}
}
