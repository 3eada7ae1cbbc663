package pyrun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/local"
)

var testEvents = Events{What: "test script", ErrorKind: phases.KindMicroError, Types: map[string]Kind{
	"progress": As[phases.Progress](phases.KindMicroProgress),
}}

func TestEventsMapLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind string
	}{
		{`{"type":"progress","done":1,"total":4,"text":"M=1"}`, phases.KindMicroProgress},
		{`{"type":"fatal","error":"CUDA out of memory"}`, phases.KindMicroError},
		{`{"type":"progress","done":"one"}`, ""}, // does not decode
		{`{"type":"start","pid":1}`, ""},
		{`{"type":"other"}`, ""},
	} {
		l, ok := ParseLine(c.in)
		if !ok {
			t.Fatalf("ParseLine(%q)", c.in)
		}
		kind, data, ok := testEvents.Event(l)
		if kind != c.kind || ok != (c.kind != "") {
			t.Errorf("%s: kind %q ok %v", c.in, kind, ok)
		}
		switch d := data.(type) {
		case *phases.Progress:
			if d.Done != 1 || d.Total != 4 || d.Text != "M=1" {
				t.Errorf("progress %+v", d)
			}
		case *phases.ScriptError:
			if d.What != "test script" || d.Err != "CUDA out of memory" || !d.Fatal {
				t.Errorf("fatal %+v", d)
			}
		}
	}
}

// TestStreamReportsADeathWithoutAFatalLine runs a stand-in script that
// prints a result and exits 1 without a fatal line: the result is emitted,
// the raw lines reach onRaw, and one fatal error event follows.
func TestStreamReportsADeathWithoutAFatalLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch := make(chan phases.Event, 16)
	var raw, after []string
	err := testEvents.Stream(ctx, Spec{Host: local.New(),
		Cmd: `echo '{"type":"progress","done":1,"total":2}'; echo 'Segmentation fault' >&2; exit 1`},
		&phases.Emitter{Out: ch}, func(s string) { raw = append(raw, s) },
		func(kind string, _ any) { after = append(after, kind) })
	close(ch)
	if err == nil {
		t.Fatal("no error")
	}
	var kinds []string
	var last phases.Event
	for ev := range ch {
		kinds = append(kinds, ev.Kind)
		last = ev
	}
	if strings.Join(kinds, ",") != phases.KindMicroProgress+","+phases.KindMicroError {
		t.Fatalf("events %v", kinds)
	}
	if e, ok := last.Data.(phases.ScriptError); !ok || !e.Fatal || e.What != "test script" || !strings.Contains(e.Err, "Segmentation fault") {
		t.Errorf("error event %+v", last.Data)
	}
	if len(raw) != 1 || len(after) != 1 {
		t.Errorf("raw %v after %v", raw, after)
	}
}
