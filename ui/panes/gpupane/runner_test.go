package gpupane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/ui/common"
)

func newRunner(name string) *Runner {
	d := &common.Deps{Styles: common.NewStyles(common.DefaultTheme()), Keys: common.DefaultKeyMap()}
	r := NewRunner(d, name, name)
	return &r
}

func status(t *testing.T, r *Runner, s Status) string {
	t.Helper()
	return ansi.Strip(strings.Join(r.StatusLines(s, 78), "\n"))
}

// end starts a run of r whose engine returns err at once (it never
// started the phase), and returns the engine's end message.
func end(r *Runner, err error) tea.Msg {
	return r.Start(r.D, func(context.Context, *phases.Emitter) error { return err })()
}

// TestRunnerEnds walks a run's ends: the root sends every pane's messages to
// every pane, so each runner takes only its own.
func TestRunnerEnds(t *testing.T) {
	micro, nccl := newRunner("micro"), newRunner("nccl")
	start := func(bool) tea.Cmd { return nil }
	microEnd := end(micro, nil)
	msg := end(nccl, &pyrun.BusyError{Procs: []pyrun.GPUProc{{PID: 7, Name: "VLLM::Worker_TP0", UsedMiB: 2048}}})
	if _, handled := micro.Update(msg, start); handled || micro.State != common.RunRunning {
		t.Fatal("micro took nccl's end")
	}
	cmd, handled := nccl.Update(msg, start)
	if !handled || cmd == nil {
		t.Fatalf("nccl: handled %v, no wait for the finish", handled)
	}
	// No finish event ever came: the run ends after a short grace.
	cmd, _ = nccl.Update(cmd(), start)
	if nccl.State != common.RunBusy || nccl.Busy == nil {
		t.Fatalf("nccl: state %v busy %v", nccl.State, nccl.Busy)
	}
	if st := cmd().(common.StatusMsg); !strings.HasPrefix(st.Text, "nccl: the GPUs are busy") {
		t.Errorf("status %q", st.Text)
	}
	if v := status(t, nccl, Status{}); !strings.Contains(v, "2.0 GiB") || !strings.Contains(v, "x: stop the server") {
		t.Errorf("busy banner:\n%s", v)
	}
	// c while running cancels; the end then keeps the results.
	if st := micro.Stop()().(common.StatusMsg); micro.State != common.RunCancelling || !strings.Contains(st.Text, "cancelling") {
		t.Fatalf("stop: %v %q", micro.State, st.Text)
	}
	// A stale end (an earlier run) is ignored.
	stale := microEnd
	microEnd = end(micro, errors.New("cancelled: context canceled"))
	micro.Cancel()
	if cmd, _ := micro.Update(stale, start); cmd != nil || micro.State != common.RunCancelling {
		t.Errorf("stale end taken: %v", micro.State)
	}
	cmd, _ = micro.Update(microEnd, start)
	micro.Update(cmd(), start)
	if micro.State != common.RunCancelled || status(t, micro, Status{}) != "cancelled: the results so far are kept" {
		t.Errorf("after cancel: %v %q", micro.State, status(t, micro, Status{}))
	}
	if st := micro.Stop()().(common.StatusMsg); st.Text != "micro: nothing is running" {
		t.Errorf("stop when idle: %q", st.Text)
	}
	// A failure shows as an error.
	cmd, _ = micro.Update(end(micro, fmt.Errorf("exit status 1")), start)
	cmd, _ = micro.Update(cmd(), start)
	if st := cmd().(common.StatusMsg); !st.Error || st.Text != "micro: exit status 1" {
		t.Errorf("failure status %+v", st)
	}
	if v := status(t, micro, Status{}); v != "error: exit status 1" {
		t.Errorf("failure line %q", v)
	}
}

func TestStatusLines(t *testing.T) {
	r := newRunner("micro")
	if v := status(t, r, Status{Empty: true, Hint: "s: time"}); v != "s: time" {
		t.Errorf("idle %q", v)
	}
	r.State = common.RunRunning
	if v := status(t, r, Status{Progress: phases.Progress{Done: 5, Total: 10, Text: "M=8"}}); v != strings.Repeat("█", 10)+strings.Repeat("░", 10)+" running 5/10 M=8" {
		t.Errorf("running %q", v)
	}
	r.State = common.RunFinished
	if v := status(t, r, Status{Done: "done: 3 GEMMs"}); v != "done: 3 GEMMs" {
		t.Errorf("done %q", v)
	}
}

// A reopened journal's run that never finished (its process died) is not a
// run under way elsewhere: s is not refused for it. Its events still reach
// the pane; a live start elsewhere still counts.
func TestReplayedUnfinishedRunIsNotElsewhere(t *testing.T) {
	for _, phase := range []string{phases.Micro, phases.NCCL} {
		r := newRunner(phase)
		var added int
		add := func(evs []phases.Event) { added += len(evs) }
		start := func(bool) tea.Cmd { return nil }
		key := func(tea.KeyPressMsg) tea.Cmd { return nil }
		started := phases.Event{Phase: phases.Session, Kind: phases.KindSessionPhaseStarted, Data: phases.PhaseStarted{Name: phase}}
		progress := phases.Event{Phase: phase, Kind: phase + ".progress", Data: phases.Progress{Done: 1, Total: 4}}
		r.Route(common.EventsMsg{Replayed: true, Events: []phases.Event{started, progress}}, NewKeys(), start, add, key)
		if r.Elsewhere() || r.State != common.RunIdle || added != 1 {
			t.Fatalf("%s: replayed: elsewhere %v, state %v, %d events added (want 1)", phase, r.Elsewhere(), r.State, added)
		}
		if _, _, cmd, ok := r.Begin(); ok || strings.Contains(cmd().(common.StatusMsg).Text, "started elsewhere") {
			t.Errorf("%s: s after a reopened unfinished run: %q", phase, cmd().(common.StatusMsg).Text)
		}
		r.Route(common.EventsMsg{Events: []phases.Event{started}}, NewKeys(), start, add, key)
		if !r.Elsewhere() {
			t.Errorf("%s: a live start elsewhere is not counted", phase)
		}
	}
}

// After a busy start the help line says what s does there, as the pane's
// own line does ("s: check again"); elsewhere s still says "start".
func TestBusyHelpSaysCheckAgain(t *testing.T) {
	r := newRunner(phases.Micro)
	k := NewKeys()
	r.State = common.RunBusy
	help, ok := r.BusyHelp(k)
	if !ok || len(help) != 3 {
		t.Fatalf("busy help: ok %v, %d keys", ok, len(help))
	}
	if h := help[2].Help(); h.Key != "s" || h.Desc != "check again" {
		t.Errorf("busy help for s: %+v, want s check again", h)
	}
	if h := k.Start.Help(); h.Desc != "start" {
		t.Errorf("the shared s binding changed: %+v", h)
	}
}
