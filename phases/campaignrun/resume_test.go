package campaignrun

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

type evs struct {
	t   time.Time
	out []phases.Event
}

func (e *evs) add(kind string, data any) *evs {
	e.t = e.t.Add(time.Second)
	e.out = append(e.out, phases.New(e.t, kind, data))
	return e
}

func (e *evs) step(name, state string) *evs {
	return e.add(phases.KindRunStep, phases.RunStep{Name: name, State: state})
}

var kimi = phases.RunIdentity{Model: "moonshotai/Kimi-K2.5", TP: 8, Launch: "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8"}

func names(m map[string]Span) string {
	var out []string
	for _, s := range Steps {
		if _, ok := m[s]; ok {
			out = append(out, s)
		}
	}
	return strings.Join(out, ",")
}

func TestDoneStepsLatestWordWins(t *testing.T) {
	e := &evs{t: time.Unix(0, 0)}
	e.add(phases.KindRunStarted, phases.RunStarted{Identity: kimi})
	e.step(Serve, phases.StepStarted).step(Serve, phases.StepDone)
	e.step(Macro, phases.StepStarted).step(Macro, phases.StepDone)
	e.step(Micro, phases.StepStarted) // a crash: never ended
	e.add(phases.KindRunStarted, phases.RunStarted{Identity: kimi})
	e.step(Macro, phases.StepStarted).step(Macro, phases.StepStopped) // redone and interrupted
	if got := names(DoneSteps(e.out, kimi)); got != "serve" {
		t.Errorf("done %q, want serve only (macro's latest word is stopped, micro never ended)", got)
	}
}

func TestDoneStepsOtherIdentityStartsOver(t *testing.T) {
	other := kimi
	other.TP = 4
	e := &evs{t: time.Unix(0, 0)}
	e.add(phases.KindRunStarted, phases.RunStarted{Identity: kimi})
	e.step(Macro, phases.StepStarted).step(Macro, phases.StepDone)
	e.add(phases.KindRunStarted, phases.RunStarted{Identity: other})
	e.step(Micro, phases.StepStarted).step(Micro, phases.StepDone)
	if got := names(DoneSteps(e.out, kimi)); got != "" {
		t.Errorf("done for TP8 %q: a run for TP4 came after, so nothing is done for TP8", got)
	}
	if got := names(DoneSteps(e.out, other)); got != "micro" {
		t.Errorf("done for TP4 %q, want micro", got)
	}
}

func TestDoneStepsByHand(t *testing.T) {
	e := &evs{t: time.Unix(0, 0)}
	// A sweep stopped before its first level does not count; one with a
	// level does; a failed micro and a cancelled NCCL run do not; a
	// profile counts for the
	// restart before it too.
	e.add(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro})
	e.add(phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro})
	if got := names(DoneSteps(e.out, kimi)); got != "" {
		t.Fatalf("done %q after an empty sweep", got)
	}
	e.add(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro})
	e.add(phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 4})
	e.add(phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro})
	e.add(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Micro})
	e.add(phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Micro, Err: "CUDA out of memory"})
	e.add(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.NCCL})
	e.add(phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.NCCL, Outcome: phases.OutcomeCancelled})
	e.add(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Profile})
	e.add(phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Profile})
	done := DoneSteps(e.out, kimi)
	if got := names(done); got != "macro,profiler_restart,profile" {
		t.Errorf("done by hand %q, want macro,profiler_restart,profile", got)
	}
	if !done[Macro].Manual {
		t.Error("the sweep by hand is not marked manual")
	}
}

func TestTodoRunsTheServerStepsThatAreNeeded(t *testing.T) {
	done := map[string]Span{}
	for _, s := range []string{Serve, Macro, FreeGPUs, Micro, NCCL, LeaveServer, Notebook} {
		done[s] = Span{}
	}
	r := &runner{}
	got := r.todo(Steps, done, nil)
	var do []string
	for _, s := range Steps {
		if got[s] {
			do = append(do, s)
		}
	}
	if strings.Join(do, ",") != "doctor,profiler_restart,profile,leave_server,notebook" {
		t.Errorf("todo %v", do)
	}
	// --redo macro makes sure the server serves first.
	got = r.todo(Steps, done, expandRedo([]string{"macro"}))
	if !got[Serve] || !got[Macro] || got[Micro] || !got[LeaveServer] {
		t.Errorf("--redo macro: %v", got)
	}
}

func TestPlanAndNames(t *testing.T) {
	if got := strings.Join(Plan([]string{phases.Micro}), ","); got != "doctor,free_gpus,micro,leave_server,notebook" {
		t.Errorf("plan for micro: %s", got)
	}
	if got := strings.Join(Plan([]string{phases.Profile}), ","); got != "doctor,profiler_restart,profile,leave_server,notebook" {
		t.Errorf("plan for profile: %s", got)
	}
	if err := CheckNames([]string{"macro", "bogus"}, false); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("CheckNames: %v", err)
	}
	if err := CheckNames([]string{"profiler_restart", "micro"}, true); err != nil {
		t.Errorf("--redo with a step: %v", err)
	}
	if err := CheckNames([]string{"free_gpus"}, false); err == nil {
		t.Error("--phases takes no step names")
	}
}

// BenchmarkDoneSteps folds a long journal (ten runs of every step and
// 1,000 phase runs by hand), as the cockpit's checklist does on each batch.
func BenchmarkDoneSteps(b *testing.B) {
	e := &evs{t: time.Unix(0, 0)}
	for range 10 {
		e.add(phases.KindRunStarted, phases.RunStarted{Identity: kimi})
		for _, s := range Steps {
			e.step(s, phases.StepStarted).step(s, phases.StepDone)
		}
	}
	for range 1000 {
		e.add(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro})
		e.add(phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 4})
		e.add(phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro, Outcome: phases.OutcomeDone})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if len(DoneSteps(e.out, kimi)) != len(Steps) {
			b.Fatal("not every step done")
		}
	}
}

// TestJournalPlateauSameIdentityOnly: the profile's plateau comes from the
// latest sweep for the run's model, TP and launch; a TP8 run's plateau is
// not profiled in a TP4 run (it was), a later sweep without a plateau
// replaces an earlier one's, and a sweep run by hand belongs to the run
// before it.
func TestJournalPlateauSameIdentityOnly(t *testing.T) {
	tp4 := kimi
	tp4.TP = 4
	sweep := func(e *evs, plateau int) {
		e.add(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro})
		if plateau > 0 {
			e.add(phases.KindMacroPlateau, phases.Plateau{Concurrency: plateau})
		}
		e.add(phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro, Outcome: phases.OutcomeDone})
	}
	e := &evs{t: time.Unix(0, 0)}
	e.add(phases.KindRunStarted, phases.RunStarted{Identity: kimi})
	sweep(e, 64)
	if got := JournalPlateau(e.out, kimi); got != 64 {
		t.Errorf("TP8 after its own sweep: %d, want 64", got)
	}
	if got := JournalPlateau(e.out, tp4); got != 0 {
		t.Errorf("TP4 given a TP8 run's plateau: %d", got)
	}
	e.add(phases.KindRunStarted, phases.RunStarted{Identity: tp4})
	sweep(e, 32)
	if got := JournalPlateau(e.out, kimi); got != 0 {
		t.Errorf("TP8 after a TP4 run: %d, want 0 (a run for another identity starts over)", got)
	}
	if got := JournalPlateau(e.out, tp4); got != 32 {
		t.Errorf("TP4: %d, want 32", got)
	}
	sweep(e, 0) // by hand, after the TP4 run: a sweep that found none
	if got := JournalPlateau(e.out, tp4); got != 0 {
		t.Errorf("TP4 after a sweep without a plateau: %d, want 0", got)
	}
	sweep(e, 16)
	if got := JournalPlateau(e.out, tp4); got != 16 {
		t.Errorf("TP4 after a sweep by hand: %d, want 16", got)
	}
}

// A sweep step that ended done with no level in the journal (its levels
// could not be written: a rate of +Inf made them unencodable) is not done:
// the next run sweeps again rather than skipping to a notebook without it.
func TestDoneStepsSweepWithoutLevelsNotDone(t *testing.T) {
	sweep := func(e *evs, levels int) {
		e.step(Macro, phases.StepStarted)
		e.add(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Macro})
		for i := 0; i < levels; i++ {
			e.add(phases.KindMacroLevel, phases.LevelResult{Concurrency: 1 << i, Completed: 4})
		}
		e.add(phases.KindSessionPhaseFinished, phases.PhaseFinished{Name: phases.Macro, Outcome: phases.OutcomeDone})
		e.step(Macro, phases.StepDone)
	}
	e := &evs{t: time.Unix(0, 0)}
	e.add(phases.KindRunStarted, phases.RunStarted{Identity: kimi})
	e.step(Serve, phases.StepStarted).step(Serve, phases.StepDone)
	sweep(e, 0)
	if got := names(DoneSteps(e.out, kimi)); got != "serve" {
		t.Errorf("done %q, want serve only: the sweep journalled no level", got)
	}
	sweep(e, 2)
	if got := names(DoneSteps(e.out, kimi)); got != "serve,macro" {
		t.Errorf("done %q after a sweep with levels, want serve,macro", got)
	}
}

// A step done with other parameters is changed, key by key; one recorded
// without parameters (an older journal), or compared with none, is not.
func TestChangedStepsSaysWhat(t *testing.T) {
	e := &evs{t: time.Unix(0, 0)}
	e.add(phases.KindRunStarted, phases.RunStarted{Identity: kimi})
	e.step(Macro, phases.StepStarted)
	e.add(phases.KindMacroLevel, phases.LevelResult{Concurrency: 1, Completed: 12})
	e.add(phases.KindRunStep, phases.RunStep{Name: Macro, State: phases.StepDone,
		Params: map[string]string{"macro.concurrency": "1,2", "macro.duration": "3s", "macro.slo": ""}})
	e.step(Micro, phases.StepStarted).step(Micro, phases.StepDone) // no parameters recorded
	e.step(NCCL, phases.StepStarted)
	e.add(phases.KindRunStep, phases.RunStep{Name: NCCL, State: phases.StepDone, Params: map[string]string{"nccl.nproc": "8"}})
	done := DoneSteps(e.out, kimi)
	now := map[string]map[string]string{
		Macro: {"macro.concurrency": "1,8", "macro.duration": "3s", "macro.slo": "ttft=2s"},
		Micro: {"micro.batch": "1,8"},
		NCCL:  {"nccl.nproc": "8"},
	}
	got := ChangedSteps(done, now)
	want := []string{"macro.concurrency: 1,2 → 1,8", "macro.slo: (none) → ttft=2s"}
	if strings.Join(got[Macro], "|") != strings.Join(want, "|") || len(got) != 1 {
		t.Errorf("changed %q, want macro only: %q", got, want)
	}
	if len(ChangedSteps(done, nil)) != 0 {
		t.Error("no parameters now: nothing can be said to have changed")
	}
}

// The steps measured at the sweep's levels carry its workload and plateau:
// a change of either makes them out of date; a step recorded before they
// were kept is taken as unchanged.
func TestChangedStepsAcrossTheSweep(t *testing.T) {
	then := map[string]string{"micro.batch": "", "sweep.input_len": "256", SweepPlateauKey: "128"}
	done := map[string]Span{Micro: {Params: then}, NCCL: {Params: map[string]string{"nccl.sizes": ""}}}
	now := map[string]map[string]string{
		Micro: {"micro.batch": "", "sweep.input_len": "1024"},
		NCCL:  {"nccl.sizes": "", "sweep.input_len": "1024"},
	}
	ch := ChangedSteps(done, withPlateau(now, 128))
	if got := strings.Join(ch[Micro], "; "); got != "sweep.input_len: 256 → 1024" {
		t.Errorf("micro: %q", got)
	}
	if len(ch[NCCL]) != 0 {
		t.Errorf("nccl recorded without the sweep's workload: %v", ch[NCCL])
	}
	now[Micro]["sweep.input_len"] = "256"
	ch = ChangedSteps(done, withPlateau(now, 64))
	if got := strings.Join(ch[Micro], "; "); got != "sweep.plateau: 128 → 64" {
		t.Errorf("micro after a new plateau: %q", got)
	}
	// A view that knows no plateau (the checklist's campaign parameters)
	// compares the rest.
	if ch = ChangedSteps(done, now); len(ch[Micro]) != 0 {
		t.Errorf("micro, no plateau known now: %v", ch[Micro])
	}
	if withPlateau(now, 0)[Micro][SweepPlateauKey] != "" || withPlateau(now, 8)[Macro] != nil {
		t.Error("withPlateau adds a plateau where none is known, or to the sweep")
	}
}
