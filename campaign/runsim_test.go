package campaign

import (
	"context"
	"flag"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim"
)

// stopProfileTime starts the simulated deployment the campaign's host
// options describe, launches its server with the torch profiler, and times
// one stop_profile after a start: the profiler's flush as the host does it.
func stopProfileTime(t *testing.T, yaml string) time.Duration {
	t.Helper()
	c, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := sim.Start(ctx, c.HostOptions().Sim)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	launch := `vllm serve m --profiler-config '{"profiler": "torch", "torch_profiler_dir": "/tmp/prof"}' > /var/log/vllm/server.log 2>&1 &`
	if err := d.Run(ctx, launch, nil, nil); err != nil {
		t.Fatal(err)
	}
	for !d.Ready() {
		if ctx.Err() != nil {
			t.Fatal("the simulated server never became ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		return d.DialContext(ctx, n, a)
	}}}
	base := "http://" + d.Options().ServerAddr
	post := func(path string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", path, resp.Status)
		}
	}
	post("/start_profile")
	start := time.Now()
	post("/stop_profile")
	return time.Since(start)
}

// sim.profiler_flush: 0 is no flush delay, as written; an absent key keeps
// the 3 s default. A 0 used to read as absent and flush for 3 s.
func TestSimProfilerFlushZeroIsGiven(t *testing.T) {
	const head = "host: sim\nsim:\n  load_time: 200ms\n"
	t.Run("zero", func(t *testing.T) {
		t.Parallel()
		if took := stopProfileTime(t, head+"  profiler_flush: 0s\n"); took >= sim.DefaultProfilerFlush {
			t.Errorf("profiler_flush: 0s: stop_profile took %s; want no flush delay (well under %s)", took, sim.DefaultProfilerFlush)
		} else {
			t.Logf("profiler_flush: 0s: stop_profile took %s", took)
		}
	})
	t.Run("absent", func(t *testing.T) {
		t.Parallel()
		if took := stopProfileTime(t, head); took < sim.DefaultProfilerFlush {
			t.Errorf("no profiler_flush: stop_profile took %s; want the %s default", took, sim.DefaultProfilerFlush)
		} else {
			t.Logf("no profiler_flush: stop_profile took %s", took)
		}
	})
}

// A 0 given for a key whose 0 the simulated host or the launcher cannot
// honour (a load that takes no time, no nodes, port 0) is refused, naming
// the line or the flag; it used to read as absent and take the default.
// Left out, each keeps its default.
func TestGivenZeroRefused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"host: sim\nsim:\n  load_time: 0s\n", "line 3: sim.load_time: must be more than 0"},
		{"host: sim\nsim:\n  nodes: 0\n", "line 3: sim.nodes: must be 1 to 64, got 0"},
		{"nccl:\n  master_port: 0\n", "line 2: nccl.master_port: must be a port (1-65535), got 0"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.yaml, err, tc.want)
		}
	}
	c, err := Parse([]byte("host: sim\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.NCCLConfig().MasterPort != DefaultMasterPort || c.NodeCount() != 1 {
		t.Errorf("absent keys: master port %d, nodes %d", c.NCCLConfig().MasterPort, c.NodeCount())
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Duration("load-time", 0, "")
	if err := fs.Parse([]string{"--load-time", "0s"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(fs, Flag{"load-time", "sim.load_time"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "--load-time: must be more than 0") {
		t.Errorf("--load-time 0: %v", err)
	}
}

// The option the simulated host receives: the default when the key is
// left out, 0 when the file says 0, and a key set over the file's value
// (as a flag bound to it does) wins whatever its value.
func TestSimProfilerFlushOption(t *testing.T) {
	flush := func(c *Campaign) time.Duration { return *c.SimOptions().ProfilerFlush }
	if got := flush(Defaults()); got != DefaultSimProfilerFlush {
		t.Errorf("left out: %s, want %s", got, DefaultSimProfilerFlush)
	}
	c, err := Parse([]byte("host: sim\nsim:\n  profiler_flush: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := flush(c); got != 0 {
		t.Errorf("profiler_flush: 0s: %s, want 0", got)
	}
	c, err = Parse([]byte("host: sim\nsim:\n  profiler_flush: 5s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetKey("sim.profiler_flush", "0s"); err != nil {
		t.Fatal(err)
	}
	if got := flush(c); got != 0 {
		t.Errorf("set to 0s over the file's 5s: %s, want 0", got)
	}
}
