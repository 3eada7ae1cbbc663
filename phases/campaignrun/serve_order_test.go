package campaignrun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote/sim"
)

// The one-load order's serve step restarts a server serving without the
// profiler when the profile is to do, and keeps one serving with it (a
// resumed run loads nothing); the probe starts no capture.
func TestServeProfiledKeepsAServerWithTheProfiler(t *testing.T) {
	if testing.Short() {
		t.Skip("loads on the simulated host")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := sim.Start(ctx, sim.Options{LoadTime: 300 * time.Millisecond, AutoStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for !d.Ready() {
		time.Sleep(20 * time.Millisecond)
	}
	logPath := "/var/log/vllm/server.log"
	cfg := Config{Host: d, Order: OrderOneLoad, ProfilerDir: "/tmp/vllm_profile",
		Server: &load.Server{Host: d, Settings: load.Settings{Launch: "vllm serve m --port 8000", Log: logPath}, PIDFile: logPath + ".pid"},
		Watch: load.Config{LogPath: logPath, HealthURL: "http://" + d.Options().ServerAddr + "/health", Poll: 100 * time.Millisecond,
			StallAfter: 10 * time.Second, PIDFile: logPath + ".pid", SnapshotEvery: time.Second, DiagnoseWindow: time.Second}}
	r := newRunner(cfg, nil)
	defer r.close()
	r.profileToDo = true
	if r.profilerConfigured(ctx) {
		t.Fatal("the server started without the profiler answers as configured")
	}
	state, reason := r.serveProfiled(ctx)
	if state != "done" || !strings.Contains(reason, "restarted with the profiler") || d.ProfilerDir() == "" {
		t.Fatalf("serving without the profiler: %s (%s), profiler dir %q; want a restart with it", state, reason, d.ProfilerDir())
	}
	state, reason = r.serveProfiled(ctx)
	if state != "done" || !strings.HasPrefix(reason, "already serving with the profiler configured") {
		t.Errorf("serving with the profiler: %s (%s), want it kept", state, reason)
	}
}
