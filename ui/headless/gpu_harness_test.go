package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/pyrun"
)

type testResult struct{ events []string }

func (r *testResult) Add(ev phases.Event)     { r.events = append(r.events, ev.Kind) }
func (r *testResult) WriteTables(w io.Writer) { fmt.Fprintf(w, "%d events\n", len(r.events)) }
func (r *testResult) Empty() bool             { return len(r.events) == 0 }

func TestRunExitCodes(t *testing.T) {
	busy := &pyrun.BusyError{Procs: []pyrun.GPUProc{{PID: 1, Name: "VLLM::Worker", UsedMiB: 1024}}}
	for _, c := range []struct {
		name   string
		err    error
		cancel bool
		code   int
		tables bool
	}{
		{"ok", nil, false, 0, true},
		{"failed", errors.New("exit status 1"), false, 1, true},
		{"cancelled", errors.New("cancelled: context canceled"), true, 130, true},
		{"busy", busy, false, 3, false},
		{"busy, cancelled", busy, true, 3, false},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		if c.cancel {
			cancel()
		}
		var out, errOut bytes.Buffer
		res := &testResult{}
		var report string
		cm := New("micro", "", &out, &errOut)
		code := cm.Exit(ctx, runGPU(ctx, cm, gpuPhase{Result: res, ErrorText: func(e phases.ScriptError) string { return e.Err },
			Run: func(ctx context.Context, em *phases.Emitter, onRaw func(string)) error {
				em.Emit(context.Background(), phases.KindMicroProgress, phases.Progress{Done: 1, Total: 2, Text: "M=1"})
				return c.err
			},
			Report: func(e string) any { report = e; return e }}))
		cancel()
		if code != c.code {
			t.Errorf("%s: code %d, want %d", c.name, code, c.code)
		}
		if !strings.Contains(errOut.String(), "[1/2] M=1") {
			t.Errorf("%s: stderr %q", c.name, errOut.String())
		}
		if c.err != nil && !strings.Contains(errOut.String(), "profdeck micro: "+c.err.Error()) {
			t.Errorf("%s: stderr %q", c.name, errOut.String())
		}
		if got := out.String() == "1 events\n"; got != c.tables {
			t.Errorf("%s: stdout %q", c.name, out.String())
		}
		if report != "" {
			t.Errorf("%s: report written without --json", c.name)
		}
	}
}
