package gpubench

import (
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
	return &Runner{Name: name, Phase: name, D: d}
}

func status(t *testing.T, r *Runner, s Status) string {
	t.Helper()
	return ansi.Strip(strings.Join(r.StatusLines(s, 78), "\n"))
}

// TestRunnerEnds walks a run's ends: the root sends every pane's messages to
// every pane, so each runner takes only its own.
func TestRunnerEnds(t *testing.T) {
	micro, nccl := newRunner("micro"), newRunner("nccl")
	start := func(bool) tea.Cmd { return nil }
	for _, r := range []*Runner{micro, nccl} {
		r.run, r.State = 1, Running
	}
	msg := DoneMsg{runner: nccl, Run: 1, Err: &pyrun.BusyError{Procs: []pyrun.GPUProc{{PID: 7, Name: "VLLM::Worker_TP0", UsedMiB: 2048}}}}
	if _, handled := micro.Update(msg, start); handled || micro.State != Running {
		t.Fatal("micro took nccl's end")
	}
	cmd, handled := nccl.Update(msg, start)
	if !handled || nccl.State != Idle || nccl.Busy == nil {
		t.Fatalf("nccl: handled %v state %v busy %v", handled, nccl.State, nccl.Busy)
	}
	if st := cmd().(common.StatusMsg); !strings.HasPrefix(st.Text, "nccl: the GPUs are busy") {
		t.Errorf("status %q", st.Text)
	}
	if v := status(t, nccl, Status{}); !strings.Contains(v, "2.0 GiB") || !strings.Contains(v, "x: stop the server") {
		t.Errorf("busy banner:\n%s", v)
	}
	// A stale end (an earlier run) is ignored.
	if cmd, _ := micro.Update(DoneMsg{runner: micro, Run: 0}, start); cmd != nil || micro.State != Running {
		t.Error("stale end taken")
	}
	// c while running cancels; the end then keeps the results.
	cancelled := false
	micro.cancel = func() { cancelled = true }
	if st := micro.Stop()().(common.StatusMsg); !cancelled || micro.State != Cancelling || !strings.Contains(st.Text, "cancelling") {
		t.Fatalf("stop: %v %v %q", cancelled, micro.State, st.Text)
	}
	micro.Update(DoneMsg{runner: micro, Run: 1, Err: errors.New("cancelled: context canceled")}, start)
	if micro.Failed || micro.Msg != "cancelled: the results so far are kept" {
		t.Errorf("after cancel: failed %v msg %q", micro.Failed, micro.Msg)
	}
	if st := micro.Stop()().(common.StatusMsg); st.Text != "micro: nothing is running" {
		t.Errorf("stop when idle: %q", st.Text)
	}
	// A failure shows as an error.
	micro.run, micro.State = 2, Running
	cmd, _ = micro.Update(DoneMsg{runner: micro, Run: 2, Err: fmt.Errorf("exit status 1")}, start)
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
	r.State = Running
	if v := status(t, r, Status{Progress: phases.Progress{Done: 5, Total: 10, Text: "M=8"}}); v != strings.Repeat("█", 10)+strings.Repeat("░", 10)+" running 5/10 M=8" {
		t.Errorf("running %q", v)
	}
	r.State, r.Done = Idle, true
	if v := status(t, r, Status{Done: "done: 3 GEMMs"}); v != "done: 3 GEMMs" {
		t.Errorf("done %q", v)
	}
}
