package hosts

import (
	"context"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

func TestOpen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Open(ctx, "sim", Options{Sim: sim.Options{LoadTime: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if h.Name() != "sim" || !remote.IsSimulated(h) {
		t.Fatalf("sim: %s simulated=%v", h.Name(), remote.IsSimulated(h))
	}
	h.Close()

	h, err = Open(ctx, "local", Options{})
	if err != nil || h.Name() != "local" || remote.IsSimulated(h) {
		t.Fatalf("local: %v %v", h, err)
	}

	// A failure gives a nil interface, not a typed nil inside it.
	h, err = Open(ctx, "sim", Options{Sim: sim.Options{FailWith: "bogus"}})
	if err == nil || h != nil {
		t.Fatalf("bad sim options: host %#v, err %v", h, err)
	}
	if h, err := Open(ctx, "  ", Options{}); err == nil || h != nil {
		t.Fatalf("empty spec: %v %v", h, err)
	}
}
