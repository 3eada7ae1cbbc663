package macro_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/ssh"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

type dialer = func(ctx context.Context, network, addr string) (net.Conn, error)

// pathRow is one sweep level against the recording server: the client's
// medians beside the server's own.
type pathRow struct {
	name               string
	c                  int
	cli, srv           serverFigures
	dTTFT, dITL, dTPOT float64 // ms, %, %
	path               *phases.MacroPath
	perRead            float64
}

func (r pathRow) String() string {
	return fmt.Sprintf("%-28s C=%-3d TTFT p50 %6.2f ms vs server %5.2f ms (%+6.2f ms)  ITL p50 %.4f vs %.4f ms (%+6.2f%%)  TPOT p50 %.4f vs %.4f ms (%+6.2f%%)  %.2f events/read, rtt p50 %.2f ms",
		r.name, r.c, r.cli.ttft, r.srv.ttft, r.dTTFT, r.cli.itl, r.srv.itl, r.dITL, r.cli.tpot, r.srv.tpot, r.dTPOT, r.perRead, r.path.RTTp50ms)
}

// pathLevel runs one closed-loop level of n requests × out tokens at
// concurrency c through dial (nil: direct) and compares its medians with
// the server's record of the same requests.
func pathLevel(t testing.TB, url, name string, h *ssh.Host, dial dialer, c, n, out int) pathRow {
	t.Helper()
	recorded(t, url) // forget earlier requests
	cfg := macro.Config{URL: url, Model: "test/model", Concurrency: []int{c}, Requests: n, InputLen: 8,
		OutputLen: out, Seed: 1, NoPreflight: true, Dial: dial}
	if h != nil {
		cfg.Dial, cfg.Host = h.DialContext, h
	}
	s, err := macro.NewSweep(macro.Complete(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	lv := res.Levels[0]
	srv := recorded(t, url)
	if lv.Completed != n || srv.n != n {
		t.Fatalf("%s C=%d: %d completed, the server served %d; want %d (failures %v)", name, c, lv.Completed, srv.n, n, lv.Failures)
	}
	cli := serverFigures{n: lv.Completed, ttft: lv.MedianTTFTms, tpot: lv.MedianTPOTms, itl: lv.MedianITLms}
	return pathRow{name: name, c: c, cli: cli, srv: srv, dTTFT: cli.ttft - srv.ttft,
		dITL: 100 * (cli.itl - srv.itl) / srv.itl, dTPOT: 100 * (cli.tpot - srv.tpot) / srv.tpot, path: res.Path, perRead: lv.EventsPerRead}
}

// pathOut is every request's output length in the path tests: 250 tokens,
// 500 ms of stream.
const pathOut = 250

// within reports whether r's medians are the server's own: TTFT up to 2 ms
// later (the request's and the first chunk's transit), ITL and TPOT within
// 1%, each token event by itself, nothing to warn about; else why not.
func (r pathRow) within() string {
	switch {
	case r.dTTFT < 0 || r.dTTFT > 2:
		return fmt.Sprintf("median TTFT %+.2f ms from the server's; want within +2 ms", r.dTTFT)
	case r.dITL < -1 || r.dITL > 1:
		return fmt.Sprintf("median ITL %+.2f%% from the server's; want within 1%%", r.dITL)
	case r.dTPOT < -1 || r.dTPOT > 1:
		return fmt.Sprintf("median TPOT %+.2f%% from the server's; want within 1%%", r.dTPOT)
	case r.perRead > 1.2 || len(r.path.Warnings) > 0:
		return fmt.Sprintf("%.2f token events per read, path warnings %q", r.perRead, r.path.Warnings)
	}
	return ""
}

// pathTries is how many times a level may run before its figures count as
// off: other processes on a shared machine only ever make them worse, so
// one run within the bounds shows what the path does.
const pathTries = 3

// HTTP through a real sshd tells the times the server itself recorded: at
// C=4 and C=32, one-token chunks every 2 ms, the sweep's median TTFT is
// within 2 ms of the server's (the request's and the first chunk's
// transit), its median ITL and TPOT within 1%, direct and through the SSH
// host alike. PROFDECK_PATH_BEFORE=1 also measures a bare connection
// (nothing run on it, as the host's connection was before), which is not
// held to the bounds. Each token crosses three processes (server, sshd,
// sweep) that must each get a CPU at once: where they had to queue for
// one (this process's threads waited over 50 µs per wake-up on a run
// queue, or the load average is over four per core), the bounds measure
// the neighbours, not the path, and the test skips with what it saw
// rather than fail. On a quiet machine the wait is a few µs.
func TestSSHPathTiming(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of streams")
	}
	sshtest.Require(t)
	url := childRecorder(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := sshHost(t, srv)
	if how, err := h.Nodelay(); how != ssh.NodelayPTY {
		t.Fatalf("Nodelay = %q, %v", how, err)
	}
	var off []string
	w0, n0, _ := cpuWaits()
	for _, c := range []int{4, 32} {
		n := max(40, 4*c)
		for _, p := range []struct {
			name string
			h    *ssh.Host
		}{{"direct HTTP", nil}, {"through the SSH host", h}} {
			var why string
			for try := 1; try <= pathTries; try++ {
				r := pathLevel(t, url, p.name, p.h, nil, c, n, pathOut)
				t.Log(r)
				if p.h != nil && (r.path.Kind != phases.PathSSH || r.path.Nodelay != ssh.NodelayPTY || r.path.Via != h.Label()) {
					t.Fatalf("the SSH host's path: %+v", *r.path)
				}
				if why = r.within(); why == "" {
					break
				}
			}
			if why != "" {
				off = append(off, fmt.Sprintf("%s C=%d, %d runs: %s", p.name, c, pathTries, why))
			}
		}
		if os.Getenv("PROFDECK_PATH_BEFORE") != "" {
			r := pathLevel(t, url, "bare SSH connection (before)", nil, srv.DialBare(t).DialContext, c, n, pathOut)
			t.Logf("%v: %s", r, r.within())
		}
	}
	w1, n1, waitsKnown := cpuWaits()
	perWake := time.Duration(0)
	if n1 > n0 {
		perWake = (w1 - w0) / time.Duration(n1-n0)
	}
	load, busy := oversubscribed()
	t.Logf("this process waited %v per wake-up for a CPU (known: %v); load average %.1f on %d cores", perWake, waitsKnown, load, runtime.NumCPU())
	if len(off) == 0 {
		return
	}
	if busy || perWake > cpuWaitMax {
		t.Skipf("the CPUs were contended (this process waited %v per wake-up for one; load average %.1f on %d cores): timing not judged (%s)",
			perWake, load, runtime.NumCPU(), strings.Join(off, "; "))
	}
	for _, o := range off {
		t.Error(o)
	}
}

// oversubscribed reads the one-minute load average and reports whether it
// is over four runnable tasks per core.
func oversubscribed() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	load, err := strconv.ParseFloat(f[0], 64)
	return load, err == nil && load > 4*float64(runtime.NumCPU())
}

// cpuWaitMax is the mean run-queue wait per wake-up above which the
// timing bounds are not judged: a few µs on a quiet machine, 0.15–1 ms for
// the client, sshd and the server on a 2-core machine at a load average
// of 15.
const cpuWaitMax = 50 * time.Microsecond

// cpuWaits sums this process's threads' time on a run queue and their
// wake-ups (/proc/self/task/*/schedstat: run ns, wait ns, timeslices);
// false where the kernel does not say.
func cpuWaits() (time.Duration, int64, bool) {
	files, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var wait, n int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var run, w, k int64
		if _, err := fmt.Sscan(string(b), &run, &w, &k); err == nil {
			wait, n = wait+w, n+k
		}
	}
	return time.Duration(wait), n, n > 0
}
