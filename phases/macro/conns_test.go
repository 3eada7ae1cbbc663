package macro_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// connLog times the sweep's connects (when each was asked for) and, on the
// server, when the first completion request of the run was answered.
type connLog struct {
	mu        sync.Mutex
	dials     []time.Time
	firstDone time.Time
}

func (cl *connLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	cl.mu.Lock()
	cl.dials = append(cl.dials, time.Now())
	cl.mu.Unlock()
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

// serveConnLog serves an emulator that notes when its first completion
// request since the last reset was answered.
func serveConnLog(t *testing.T) (*connLog, string) {
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	cl := &connLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		emu.ServeHTTP(w, r)
		if r.URL.Path == "/v1/completions" {
			cl.mu.Lock()
			if cl.firstDone.IsZero() {
				cl.firstDone = time.Now()
			}
			cl.mu.Unlock()
		}
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); emu.Close() })
	return cl, srv.URL
}

// A closed-loop level's connections are open before it starts: the sweep
// opens what the level needs beyond the connections it has, so no request
// of a level's first wave (its first C, which start together) waits for a
// connect (through an SSH host, a channel open through sshd) that the
// server never sees. A connect asked for between the level's start and the
// first answer can only be for the first wave; later ones (a request that
// starts while the connection just freed is on its way back to the pool)
// are not counted.
func TestLevelConnectionsOpenAhead(t *testing.T) {
	t.Parallel()
	cl, url := serveConnLog(t)
	for _, c := range []int{8, 32} {
		cl.mu.Lock()
		cl.dials, cl.firstDone = nil, time.Time{}
		cl.mu.Unlock()
		evs := make(chan phases.Event, 64)
		var started time.Time
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range evs {
				if ev.Kind == phases.KindMacroLevelStarted {
					started = ev.Time
				}
			}
		}()
		s, err := macro.NewSweep(macro.Complete(macro.Config{URL: url, Concurrency: []int{c}, Requests: 2 * c, InputLen: 16, OutputLen: 40,
			Seed: 3, NoPreflight: true, Dial: cl.dial}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := s.Run(ctx, &phases.Emitter{Out: evs})
		cancel()
		close(evs)
		<-done
		if err != nil || len(res.Levels) != 1 || res.Levels[0].Completed != 2*c {
			t.Fatalf("C=%d: %v %+v", c, err, res)
		}
		var before, firstWave int
		for _, d := range cl.dials {
			switch {
			case d.Before(started):
				before++
			case d.Before(cl.firstDone):
				firstWave++
			}
		}
		t.Logf("C=%d: %d connects before the level, %d for its first wave, %d later", c, before, firstWave, len(cl.dials)-before-firstWave)
		if firstWave > 0 || before < c {
			t.Errorf("C=%d: %d connects before the level started, %d while its first wave started; want %d and 0", c, before, firstWave, c)
		}
	}
}
