package campaignrun

import (
	"slices"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

func TestOrdersAndTheirLoads(t *testing.T) {
	if got := Loads(StepsFor(OrderClassic), LeaveServing); got != 3 {
		t.Errorf("classic: %d loads, want 3", got)
	}
	if got := Loads(StepsFor(OrderOneLoad), LeaveServing); got != 1 {
		t.Errorf("one-load: %d loads, want 1", got)
	}
	if o, _ := OrderFor("", "vllm serve m"); o != OrderOneLoad {
		t.Errorf("with a launch command: %s", o)
	}
	if o, why := OrderFor("", " "); o != OrderClassic || why == "" {
		t.Errorf("without a launch command: %s (%s)", o, why)
	}
	if o, _ := OrderFor(OrderClassic, "vllm serve m"); o != OrderClassic {
		t.Errorf("asked classic: %s", o)
	}
	// --phases profile in the one-load order loads for it.
	if got := StepsOf(OrderOneLoad, []string{phases.Profile}); !slices.Contains(got, Serve) || slices.Contains(got, Restart) {
		t.Errorf("one-load, profile only: %v", got)
	}
}

// Before the sweep, micro times the GEMMs at every level and at a mixed
// step's tokens there, so the plateau's step (C=128 with 128-token
// prompts and 32 output tokens held about 611 tokens) is bracketed.
func TestReachableBracketsThePlateauStep(t *testing.T) {
	r := &runner{cfg: Config{Order: OrderOneLoad, Sweep: macro.Config{Concurrency: []int{1, 8, 64, 128, 256}, InputLen: 128, OutputLen: 32}}}
	ms := withStepTokens(nil, r.reachable())
	lo, hi := 0, 0
	for _, m := range ms {
		if m <= 611 {
			lo = m
		} else if hi == 0 {
			hi = m
		}
	}
	if lo == 0 || hi == 0 || hi > 2*lo {
		t.Errorf("batches %v: 611 tokens not bracketed closely (%d, %d)", ms, lo, hi)
	}
	r.cfg.Order = OrderClassic
	if got := r.reachable(); got != nil {
		t.Errorf("classic: %v, want none (micro follows the sweep and its step sizes)", got)
	}
}

func TestDoctorVersionPicksTheProfilerFlags(t *testing.T) {
	for found, want := range map[string]string{
		"vLLM 0.12.0 (installed for python3)": "0.12.0", "vLLM 0.15.1 (the server's /version)": "0.15.1",
		"SGLang 0.5.2": "", "vLLM (no version)": "",
	} {
		if got := DoctorVersion(phases.DoctorCheck{Name: "engine", Status: phases.CheckOK, Found: found}); got != want {
			t.Errorf("%q: %q, want %q", found, got, want)
		}
	}
	r := newRunner(Config{Order: OrderOneLoad, ProfilerDir: "/p"}, nil)
	defer r.close()
	r.emit(phases.KindDoctorCheck, phases.DoctorCheck{Name: "engine", Status: phases.CheckOK, Found: "vLLM 0.12.0 (installed for python3)"})
	if flags, env, v := r.profilerArgs(); len(flags) != 0 || env["VLLM_TORCH_PROFILER_DIR"] != "/p" || v != "0.12.0" {
		t.Errorf("after the doctor found vLLM 0.12.0: flags %v env %v (%s), want VLLM_TORCH_PROFILER_DIR", flags, env, v)
	}
}

// In the one-load order the serve step is done again for a profile still
// to do (the load it shares with the sweep), and micro and NCCL to do
// free the GPUs first.
func TestTodoOneLoad(t *testing.T) {
	r := &runner{cfg: Config{Order: OrderOneLoad}}
	done := map[string]Span{}
	for _, s := range []string{FreeGPUs, Micro, NCCL, Serve, Macro, LeaveServer, Notebook} {
		done[s] = Span{}
	}
	got := r.todo(StepsOneLoad, done, nil)
	var do []string
	for _, s := range StepsOneLoad {
		if got[s] {
			do = append(do, s)
		}
	}
	if strings.Join(do, ",") != "doctor,serve,profile,leave_server,notebook" {
		t.Errorf("profile to do: %v", do)
	}
	done[Profile] = Span{}
	got = r.todo(StepsOneLoad, done, expandRedo([]string{phases.Micro}))
	if !got[FreeGPUs] || !got[Micro] || got[Serve] || !got[LeaveServer] {
		t.Errorf("--redo micro: %v", got)
	}
}
