package load_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/ssh"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// fakeSMI is an nvidia-smi for one node: 8 GPUs holding 74 GiB each while
// the server whose pid leads the node's pid file runs, none after.
const fakeSMI = `#!/bin/sh
m=0
pid=$(cut -d " " -f 1 "%s" 2>/dev/null)
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then m=76000; fi
for i in 0 1 2 3 4 5 6 7; do echo "$i, NVIDIA H200, $m, 143771, 0"; done
`

// twoNodes starts two real sshd on loopback as two nodes, each with its own
// nvidia-smi on the sessions' PATH, and dials both.
func twoNodes(t *testing.T, ctx context.Context, logs []string) ([]*sshtest.Server, []remote.Host) {
	t.Helper()
	var srvs []*sshtest.Server
	var hs []remote.Host
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		bin := filepath.Join(dir, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(fmt.Sprintf(fakeSMI, logs[i]+".pid")), 0o755); err != nil {
			t.Fatal(err)
		}
		srv := sshtest.Start(t, sshtest.Options{Env: []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"}})
		cfg := filepath.Join(dir, "ssh_config")
		alias := fmt.Sprintf("gpu%d", i+1)
		if err := os.WriteFile(cfg, []byte(srv.ConfigBlock(alias)), 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := ssh.Dial(ctx, alias, ssh.Options{Identity: srv.ClientKey, KnownHosts: srv.KnownHosts, SSHConfig: cfg,
			ConnectTimeout: 2 * time.Second, HandshakeTimeout: 3 * time.Second, KillGrace: time.Second})
		if err != nil {
			t.Fatalf("dial node %d: %v\nsshd log:\n%s", i, err, srv.Log())
		}
		t.Cleanup(func() { h.Close() })
		srvs, hs = append(srvs, srv), append(hs, h)
	}
	return srvs, hs
}

// Two nodes over two real sshd: the head launched first, then the worker
// with its node rank; both followed, each event naming its node; a node
// that drops is "lost" and, when its sshd comes back, "back"; stop ends the
// server on both nodes.
func TestGroupLifecycleTwoSSHNodes(t *testing.T) {
	t.Parallel()
	sshtest.Require(t)
	python := needTool(t, "python3")
	out, err := exec.Command(python, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	python = strings.TrimSpace(string(out))
	script, err := filepath.Abs("testdata/fake_vllm.py")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	logs := []string{filepath.Join(dir, "head.log"), filepath.Join(dir, "worker.log")}
	srvs, hs := twoNodes(t, ctx, logs)
	if hs[0].Name() != "gpu1" || hs[1].Name() != "gpu2" {
		t.Fatalf("node names %q %q", hs[0].Name(), hs[1].Name())
	}
	ports := []int{sshtest.FreePort(t), sshtest.FreePort(t)}
	head := &load.Server{Host: hs[0], StopTimeout: 15 * time.Second, ReleasedBelowGiB: 2, Settings: load.Settings{
		Launch: fmt.Sprintf("%s %s %d 0.4", remote.Quote(python), remote.Quote(script), ports[0])}}
	worker := fmt.Sprintf(`echo "node rank $PROFDECK_NODE_RANK of $PROFDECK_NNODES, head $PROFDECK_HEAD"; exec %s %s %d 0.4`,
		remote.Quote(python), remote.Quote(script), ports[1])
	load.NodeServers(head, hs, worker, logs, "127.0.0.1")
	ch := make(chan phases.Event, 4096)
	head.Emitter = &phases.Emitter{Out: ch}
	if _, err := head.Start(ctx, nil, nil); err != nil {
		t.Fatalf("start: %v", err)
	}
	var mu sync.Mutex
	var evs []phases.Event
	go func() {
		for ev := range ch {
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		}
	}()
	g := load.NewGroup(load.Complete(load.Config{LogPath: logs[0], HealthURL: load.HealthURL(fmt.Sprintf("http://127.0.0.1:%d", ports[0])),
		Poll: 200 * time.Millisecond}), []load.Node{{Host: hs[0], LogPath: logs[0]}, {Host: hs[1], LogPath: logs[1]}})
	gctx, gcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(gctx, &phases.Emitter{Out: ch}) }()

	seen := func(pred func(phases.Event) bool) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			if pred(ev) {
				return true
			}
		}
		return false
	}
	waitFor := func(what string, pred func(phases.Event) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !seen(pred) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 20 s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	server := func(action, node string) func(phases.Event) bool {
		return func(ev phases.Event) bool {
			d, ok := ev.Data.(phases.ServerEvent)
			return ok && d.Action == action && d.Node == node
		}
	}
	waitFor("ready from the head", server("ready", hs[0].Name()))
	waitFor("worker log lines", func(ev phases.Event) bool {
		d, ok := ev.Data.(phases.LogLine)
		return ok && d.Node == hs[1].Name()
	})
	waitFor("worker GPUs in use", func(ev phases.Event) bool {
		d, ok := ev.Data.(phases.GPUSample)
		return ok && d.Host == hs[1].Name() && len(d.GPUs) == 8 && *d.GPUs[7].MemoryUsedMiB == 76000
	})
	b, err := hs[1].ReadFile(ctx, logs[1])
	if err != nil || !strings.Contains(string(b), "node rank 1 of 2, head 127.0.0.1") {
		t.Fatalf("the worker's launch did not get its node rank: %q %v", b, err)
	}
	var starts []string
	mu.Lock()
	for _, ev := range evs {
		if d, ok := ev.Data.(phases.ServerEvent); ok && d.Action == "start" {
			starts = append(starts, d.Node)
		}
	}
	mu.Unlock()
	if strings.Join(starts, ",") != "gpu1,gpu2" {
		t.Fatalf("started %v, want the head then the worker", starts)
	}

	// The worker's sshd dies and comes back.
	srvs[1].Stop()
	waitFor("node lost", server("node_lost", hs[1].Name()))
	srvs[1].Restart()
	waitFor("node back", server("node_back", hs[1].Name()))

	gcancel()
	<-done
	if err := head.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for i, n := range append([]*load.Server{head}, head.Workers...) {
		if _, alive := n.Running(ctx); alive {
			t.Fatalf("node %d still runs after stop", i)
		}
		smi, err := remote.Output(ctx, n.Host, "nvidia-smi")
		if err != nil || !strings.HasPrefix(smi, "0, NVIDIA H200, 0, ") {
			t.Fatalf("node %d's GPUs after stop: %q %v", i, smi, err)
		}
	}
	waitFor("GPU memory released on gpu1", server("stopped", "gpu1"))
	waitFor("GPU memory released on gpu2", server("stopped", "gpu2"))
}
