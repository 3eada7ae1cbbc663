package macro_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// connLog is the server's side of the sweep's connections: when each
// connection was accepted, and for each completion request when it arrived
// and when its connection was accepted.
type connLog struct {
	mu    sync.Mutex
	conns int
	reqs  []connReq
}

type connReq struct{ arrived, accepted time.Time }

type acceptedKey struct{}

// serveConnLog serves an emulator that logs connections and requests.
func serveConnLog(t *testing.T) (*connLog, string) {
	emu := vllmemu.New(vllmemu.Config{Model: "test/model", StepTime: 2 * time.Millisecond, StepPerSeq: 1, PrefillPerToken: 1, CoarseTiming: true})
	cl := &connLog{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			cl.mu.Lock()
			cl.reqs = append(cl.reqs, connReq{time.Now(), r.Context().Value(acceptedKey{}).(time.Time)})
			cl.mu.Unlock()
		}
		emu.ServeHTTP(w, r)
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		cl.mu.Lock()
		cl.conns++
		cl.mu.Unlock()
		return context.WithValue(ctx, acceptedKey{}, time.Now())
	}
	srv.Start()
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); emu.Close() })
	return cl, srv.URL
}

// take returns the connections and requests logged since the last call.
func (cl *connLog) take() (int, []connReq) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n, r := cl.conns, cl.reqs
	cl.conns, cl.reqs = 0, nil
	slices.SortFunc(r, func(a, b connReq) int { return a.arrived.Compare(b.arrived) })
	return n, r
}

// A closed-loop level's connections are open before its first request:
// the sweep opens what the level needs beyond the connections it has, so
// no request of a level's first wave pays for a connect (through an SSH
// host, a channel open through sshd) that the server never sees.
func TestLevelConnectionsOpenAhead(t *testing.T) {
	t.Parallel()
	cl, url := serveConnLog(t)
	for _, c := range []int{8, 32} {
		runSweep(t, macro.Config{URL: url, Concurrency: []int{c}, Requests: 2 * c, Warmup: 0,
			InputLen: 16, OutputLen: 40, Seed: 3, NoPreflight: true})
		conns, reqs := cl.take()
		if len(reqs) != 2*c {
			t.Fatalf("C=%d: the server saw %d requests, want %d", c, len(reqs), 2*c)
		}
		late := 0
		for _, r := range reqs[:c] {
			if r.accepted.After(reqs[0].arrived) {
				late++
			}
		}
		t.Logf("C=%d: %d connections, %d of the first %d requests on a connection opened after the level's first request", c, conns, late, c)
		if late > 0 || conns < c {
			t.Errorf("C=%d: %d of the first wave's %d requests came on a connection opened during the level (%d connections in all)", c, late, c, conns)
		}
	}
}
