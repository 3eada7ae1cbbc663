package ssh

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// benchOpts are the defaults (keepalive 15 s) with the test server's key.
func benchOpts(b *testing.B, srv *sshtest.Server) Options {
	home := b.TempDir()
	b.Setenv("HOME", home)
	b.Setenv("SSH_AUTH_SOCK", "")
	cfg := filepath.Join(home, "config")
	os.WriteFile(cfg, nil, 0o600)
	return Options{Identity: srv.ClientKey, KnownHosts: srv.KnownHosts, SSHConfig: cfg}
}

// BenchmarkConnect: TCP, key exchange, host key check, ed25519 login and
// the first round trip, to 127.0.0.1.
func BenchmarkConnect(b *testing.B) {
	srv := sshtest.Start(b, sshtest.Options{})
	opt := benchOpts(b, srv)
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		h, err := Dial(context.Background(), srv.Target(), opt)
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		h.Close()
	}
	reportPercentiles(b, times)
}

// BenchmarkFollowLatency: the delay from a line appended to a file on the
// host to its arrival from Follow, keepalive at its default.
func BenchmarkFollowLatency(b *testing.B) {
	srv := sshtest.Start(b, sshtest.Options{})
	h, err := Dial(context.Background(), srv.Target(), benchOpts(b, srv))
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	path := filepath.Join(b.TempDir(), "bench.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	got := make(chan remote.FollowEvent, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Follow(ctx, path, 0, func(ev remote.FollowEvent) { got <- ev })
	// Wait for tail to be running.
	deadline := time.After(10 * time.Second)
	for ready := false; !ready; {
		fmt.Fprintf(f, "warmup\n")
		select {
		case <-got:
			ready = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			b.Fatal("follow did not start")
		}
	}
	for len(got) > 0 {
		<-got
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		sent := time.Now()
		fmt.Fprintf(f, "line %d %d\n", i, sent.UnixNano())
		select {
		case ev := <-got:
			lat = append(lat, time.Since(sent))
			if !strings.HasPrefix(ev.Line, "line "+strconv.Itoa(i)+" ") {
				b.Fatalf("got %q for line %d", ev.Line, i)
			}
		case <-time.After(5 * time.Second):
			b.Fatalf("line %d did not arrive", i)
		}
		i++
		time.Sleep(2 * time.Millisecond) // writes apart, as a log is written
	}
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	pct := func(p float64) float64 {
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(d[len(d)-1].Microseconds())/1000, "max-ms")
}
