package ssh

import (
	"context"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

func TestForwardStates(t *testing.T) {
	_, cfg := isolate(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := dialTest(t, srv, fastOpts(srv, cfg))
	out := make(chan phases.Event, 64)
	done := make(chan struct{})
	go func() {
		ForwardStates(context.Background(), h, &phases.Emitter{Out: out})
		close(done)
	}()
	srv.Restart()
	var seen []string
	deadline := time.After(10 * time.Second)
	for len(seen) < 4 || seen[len(seen)-1] != "up" {
		select {
		case ev := <-out:
			cs, ok := ev.Data.(phases.ConnState)
			if (ev.Kind != phases.KindConnState && ev.Kind != phases.KindConnRTT) || !ok || cs.Host != h.Name() {
				t.Fatalf("event %+v", ev)
			}
			if ev.Kind == phases.KindConnRTT && (len(seen) == 0 || seen[len(seen)-1] != cs.State) {
				t.Fatalf("a change of state to %q came as a round-trip update", cs.State)
			}
			if cs.State == "up" && cs.RTTms <= 0 {
				t.Errorf("up without a round trip: %+v", cs)
			}
			if cs.State == "backoff" && (cs.Retry <= 0 || cs.Err == "") {
				t.Errorf("backoff without delay or reason: %+v", cs)
			}
			if len(seen) == 0 || seen[len(seen)-1] != cs.State {
				seen = append(seen, cs.State)
			}
		case <-deadline:
			t.Fatalf("states so far %q", seen)
		}
	}
	h.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ForwardStates did not return after Close")
	}
	t.Logf("states %q", seen)
}
