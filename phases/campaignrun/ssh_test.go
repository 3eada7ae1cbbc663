package campaignrun_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest/sshhost"
)

// The campaign run's server handling over a real OpenSSH sshd on
// 127.0.0.1: the serve step starts a fake vLLM server on the "remote" host
// and follows its load over SSH until /health answers, and leaving the
// server stopped stops it again.
func TestServeAndStopOverSSH(t *testing.T) {
	t.Parallel()
	sshtest.Require(t)
	python := sshhost.Python(t)
	script, err := filepath.Abs("../load/testdata/fake_vllm.py")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, h := sshhost.Dial(ctx, t, sshtest.Options{})
	dir := t.TempDir()

	port := sshtest.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	logPath := filepath.Join(dir, "logs", "server.log")
	s := &load.Server{Host: h, StopTimeout: 15 * time.Second, ReleasedBelowGiB: 2, Settings: load.Settings{
		Launch: fmt.Sprintf("%s %s %d 0.4", remote.Quote(python), remote.Quote(script), port), Log: logPath}}
	events := make(chan phases.Event, 4096)
	res, err := campaignrun.Run(ctx, campaignrun.Config{
		Host: h, Server: s, Phases: []string{phases.Load}, Leave: campaignrun.LeaveStopped,
		Watch: load.Config{LogPath: logPath, HealthURL: load.HealthURL(url), Poll: 200 * time.Millisecond, StallAfter: 10 * time.Second,
			SnapshotEvery: 10 * time.Second, DiagnoseWindow: 2 * time.Second},
	}, &phases.Emitter{Out: events})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range res.Steps {
		names = append(names, st.Name+"="+st.State)
	}
	if got := strings.Join(names, " "); got != "serve=done leave_server=done notebook=skipped" {
		t.Fatalf("steps %s, want serve and leave_server done (no notebook configured)", got)
	}
	if r := res.Steps[0].Reason; !strings.HasPrefix(r, "started; ready") {
		t.Errorf("serve: %q, want started and followed to ready", r)
	}
	if r := res.Steps[1].Reason; !strings.Contains(r, "stopped") {
		t.Errorf("leave_server: %q, want stopped", r)
	}
	var sawStart, sawReady bool
	for len(events) > 0 {
		if d, ok := (<-events).Data.(phases.ServerEvent); ok {
			sawStart = sawStart || d.Action == "start"
			sawReady = sawReady || d.Action == "ready"
		}
	}
	if !sawStart || !sawReady {
		t.Errorf("server events: start %v ready %v, want both", sawStart, sawReady)
	}
	if _, alive := s.Running(ctx); alive {
		t.Error("the server still runs after leave_server: stopped")
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		c.Close()
		t.Error("the port still answers after the stop")
	}
}

// A launch that dies at once (a typo) fails the serve step within seconds
// over SSH, whatever the stall threshold, with the log's last line; the run
// ends there.
func TestServeFailsWhenTheLaunchExits(t *testing.T) {
	t.Parallel()
	sshtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, h := sshhost.Dial(ctx, t, sshtest.Options{})
	logPath := filepath.Join(t.TempDir(), "server.log")
	s := &load.Server{Host: h, StopTimeout: 5 * time.Second, ReleasedBelowGiB: 2, Settings: load.Settings{Launch: "cd /no/such/opt-5521 && vllm serve m", Log: logPath}}
	events := make(chan phases.Event, 4096)
	t0 := time.Now()
	res, err := campaignrun.Run(ctx, campaignrun.Config{
		Host: h, Server: s, Phases: []string{phases.Load, phases.Macro}, Leave: campaignrun.LeaveStopped,
		Watch: load.Config{LogPath: logPath, PIDFile: logPath + ".pid", HealthURL: load.HealthURL(fmt.Sprintf("http://127.0.0.1:%d", sshtest.FreePort(t))),
			Poll: 200 * time.Millisecond, StallAfter: time.Hour, SnapshotEvery: 10 * time.Second, NoDiagnosis: true},
	}, &phases.Emitter{Out: events})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 30*time.Second {
		t.Errorf("the run took %s", took)
	}
	serve := res.Steps[0]
	if serve.Name != campaignrun.Serve || serve.State != phases.StepFailed || !strings.Contains(serve.Reason, "exited during its load") ||
		!strings.Contains(serve.Reason, "/no/such/opt-5521") {
		t.Fatalf("serve: %+v, want failed with the exit and the log's last line", serve)
	}
	if res.Steps[1].State != phases.StepSkipped {
		t.Errorf("the sweep after a failed load: %+v", res.Steps[1])
	}
}
