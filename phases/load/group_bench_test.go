package load_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
)

// benchHost is a simulated node for the polling benchmark: nvidia-smi
// answers at once with 8 GPUs whose memory grows, the log gets a line now
// and then, and nothing listens. It costs next to nothing itself, so the
// figure is the watcher's own cost.
type benchHost struct {
	name  string
	polls atomic.Int64
}

func (h *benchHost) Name() string { return h.name }

func (h *benchHost) Run(ctx context.Context, cmd string, _ io.Reader, out func(remote.Line)) error {
	n := h.polls.Add(1)
	var b strings.Builder
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&b, "%d, NVIDIA H200, %d, 143771, %d\n", i, 1000+n*37+int64(i), n%100)
	}
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		out(remote.Line{Stream: remote.Stdout, Text: l})
	}
	return nil
}

func (h *benchHost) ReadFile(context.Context, string) ([]byte, error) { return nil, os.ErrNotExist }
func (h *benchHost) WriteFile(context.Context, string, []byte, os.FileMode) error {
	return errors.New("read-only")
}

func (h *benchHost) Follow(ctx context.Context, _ string, _ int64, out func(remote.FollowEvent)) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var off int64
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			line := fmt.Sprintf("(Worker_TP%d pid=100) INFO 11-30 10:00:00 [loader.py:1] Loading safetensors checkpoint shards: %d%% Completed | %d/64", i%8, i%100, i%64)
			off += int64(len(line) + 1)
			out(remote.FollowEvent{Line: line, Offset: off})
		}
	}
}

func (h *benchHost) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("connection refused")
}
func (h *benchHost) Close() error { return nil }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGroupPoll8x8 follows 8 nodes × 8 GPUs and reports what polling
// every node once a second costs, in % of one core: the CPU time of the
// whole process (watchers, tracker, events drained by a consumer) per
// node-poll, taken at a faster poll to gather many, times 8 polls a second.
func BenchmarkGroupPoll8x8(b *testing.B) {
	const poll = 20 * time.Millisecond
	var nodes []load.Node
	var hs []*benchHost
	for i := 0; i < 8; i++ {
		h := &benchHost{name: fmt.Sprintf("node%d", i)}
		hs = append(hs, h)
		nodes = append(nodes, load.Node{Host: h, LogPath: "/var/log/vllm/server.log"})
	}
	ch := make(chan phases.Event, 1024)
	go func() {
		for range ch {
		}
	}()
	g := load.NewGroup(load.Complete(load.Config{HealthURL: "http://127.0.0.1:8000/health", Poll: poll, NoDiagnosis: true,
		SnapshotEvery: time.Second}), nodes)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Run(ctx, &phases.Emitter{Out: ch}) }()
	time.Sleep(200 * time.Millisecond) // the watchers started
	count := func() int64 {
		var n int64
		for _, h := range hs {
			n += h.polls.Load()
		}
		return n
	}
	b.ResetTimer()
	c0, p0 := cpuTime(), count()
	for count()-p0 < int64(b.N) {
		time.Sleep(poll)
	}
	cpu, polls := cpuTime()-c0, count()-p0
	b.StopTimer()
	cancel()
	<-done
	close(ch)
	perPoll := cpu / time.Duration(polls)
	b.ReportMetric(float64(perPoll.Microseconds()), "µs-cpu/node-poll")
	b.ReportMetric(100*8*perPoll.Seconds(), "%core-8x8@1Hz")
}
