package sim_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

func profClient(d *sim.Deployment) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		return d.DialContext(ctx, n, a)
	}}, Timeout: 10 * time.Second}
}

func post(t *testing.T, c *http.Client, method, url string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The endpoints answer as vLLM's do: 404 without the profiler, 405 to a
// GET, 200 to POST; a stop writes rank 0's table (which parses, with
// communication about half of the device time) and one trace per rank.
func TestProfilerEndpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := sim.Start(ctx, sim.Options{LoadTime: 200 * time.Millisecond, ProfilerFlush: new(100 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c := profClient(d)
	base := "http://" + d.Options().ServerAddr
	launch := func(cmd string) {
		if err := d.Run(ctx, cmd, nil, nil); err != nil {
			t.Fatal(err)
		}
		for !d.Ready() {
			time.Sleep(20 * time.Millisecond)
		}
	}
	launch("vllm serve m > /var/log/vllm/server.log 2>&1 &")
	if code := post(t, c, "POST", base+"/start_profile"); code != 404 {
		t.Errorf("without the profiler: %d, want 404", code)
	}
	launch(`vllm serve m --profiler-config '{"profiler": "torch", "torch_profiler_dir": "/data/prof"}' > /var/log/vllm/server.log 2>&1 &`)
	if d.ProfilerDir() != "/data/prof" {
		t.Errorf("profiler dir %q", d.ProfilerDir())
	}
	if code := post(t, c, "GET", base+"/start_profile"); code != 405 {
		t.Errorf("GET: %d, want 405", code)
	}
	if code := post(t, c, "POST", base+"/start_profile"); code != 200 {
		t.Errorf("start: %d", code)
	}
	// Some load while profiling.
	req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"model":"`+d.Options().Model+`","prompt":"hi","max_tokens":20,"ignore_eos":true}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := c.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("completion: %s", resp.Status)
		}
	}
	if code := post(t, c, "POST", base+"/stop_profile"); code != 200 {
		t.Errorf("stop: %d", code)
	}
	out, err := remote.Output(ctx, d, `find /data/prof -maxdepth 2 -type f -printf '%T@ %s %p\n'`)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, ".pt.trace.json.gz"); n != 8 || !strings.Contains(out, "/data/prof/profiler_out_0.txt") {
		t.Errorf("files:\n%s", out)
	}
	b, err := d.ReadFile(ctx, "/data/prof/profiler_out_0.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := profile.ParseTable(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if s.CommunicationShare < 0.4 || s.CommunicationShare > 0.6 || s.UnlistedUs != 0 {
		t.Errorf("share %.3f unlisted %v", s.CommunicationShare, s.UnlistedUs)
	}
	// A second stop without a start answers 200 and logs the worker's failure.
	if code := post(t, c, "POST", base+"/stop_profile"); code != 200 {
		t.Errorf("second stop: %d", code)
	}
	log, _ := d.ReadFile(ctx, d.LogPath())
	if !strings.Contains(string(log), "Failed to stop profiler") {
		t.Error("no worker warning for a stop without a start")
	}
	if _, err := remote.Output(ctx, d, `find /nope -maxdepth 2 -type f -printf '%T@ %s %p\n'`); err == nil || !strings.Contains(err.Error(), "No such file") {
		t.Errorf("find on a missing dir: %v", err)
	}
}

// ProfilerFlush left nil is the 3 s default; a pointer to 0 is no delay
// and stays 0 (it used to read as unset and become 3 s).
func TestProfilerFlushZeroIsKept(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		set  *time.Duration
		want time.Duration
	}{{nil, sim.DefaultProfilerFlush}, {new(time.Duration(0)), 0}, {new(time.Second), time.Second}} {
		d, err := sim.Start(ctx, sim.Options{LoadTime: time.Second, ProfilerFlush: tc.set})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Options().ProfilerFlush; got == nil || *got != tc.want {
			t.Errorf("ProfilerFlush %v: the deployment flushes for %v, want %s", tc.set, got, tc.want)
		}
		d.Close()
	}
}
