package sim

import (
	"context"
	"strings"
	"testing"
	"time"
)

func startNodes(t *testing.T, opt Options, n, fault int) ([]*Deployment, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	t.Cleanup(cancel)
	ds, err := StartNodes(ctx, opt, n, fault)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range ds {
			d.Close()
		}
	})
	return ds, ctx
}

func launchAll(t *testing.T, ctx context.Context, ds []*Deployment) {
	t.Helper()
	for i, d := range ds {
		cmd := "nohup vllm serve m --tensor-parallel-size 16 > /var/log/vllm/server.log 2>&1 &"
		if i > 0 {
			cmd = "nohup vllm serve m --tensor-parallel-size 16 --headless --node-rank 1 > /var/log/vllm/server.log 2>&1 &"
		}
		if err := d.Run(ctx, cmd, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTwoNodesServeTP16(t *testing.T) {
	ds, ctx := startNodes(t, Options{LoadTime: 1500 * time.Millisecond}, 2, -1)
	if ds[0].Name() != "sim0" || ds[1].Name() != "sim1" {
		t.Fatalf("names %s %s", ds[0].Name(), ds[1].Name())
	}
	launchAll(t, ctx, ds)
	deadline := time.Now().Add(10 * time.Second)
	for !ds[0].Ready() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !ds[0].Ready() {
		t.Fatalf("head not ready: %s / %s", ds[0].Stage(), ds[1].Stage())
	}
	for _, d := range ds {
		for _, g := range d.GPUs() {
			if g.MemUsedMiB < 70*1024 {
				t.Fatalf("%s gpu %d at %d MiB", d.Name(), g.Index, g.MemUsedMiB)
			}
		}
	}
	// Only the head has an API server.
	if _, err := ds[1].DialContext(ctx, "tcp", "127.0.0.1:8000"); err == nil {
		t.Fatal("the headless node answered on :8000")
	}
	if c, err := ds[0].DialContext(ctx, "tcp", "127.0.0.1:8000"); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}
	head, _ := ds[0].ReadFile(ctx, "/var/log/vllm/server.log")
	worker, _ := ds[1].ReadFile(ctx, "/var/log/vllm/server.log")
	if !strings.Contains(string(head), "world_size=16 rank=3 local_rank=3") || !strings.Contains(string(worker), "world_size=16 rank=11 local_rank=3") {
		t.Fatal("logs lack the TP16 ranks")
	}
	if strings.Contains(string(worker), "APIServer") || strings.Contains(string(worker), "Application startup complete") {
		t.Fatal("the headless node's log has API server lines")
	}
	if !strings.Contains(string(worker), "(Worker_TP11 pid=") {
		t.Fatal("the worker node's ranks are not 8-15")
	}
}

func TestOneNodeStallsAloneAndHoldsTheHead(t *testing.T) {
	ds, ctx := startNodes(t, Options{LoadTime: 1500 * time.Millisecond, StallAtGiB: 40}, 2, 1)
	launchAll(t, ctx, ds)
	time.Sleep(3 * time.Second) // twice the load time
	if ds[0].Ready() {
		t.Fatal("the head became ready while a node stalled")
	}
	for _, g := range ds[1].GPUs() {
		if g.MemUsedMiB > 40*1024+1 {
			t.Fatalf("stalled node's gpu %d at %d MiB", g.Index, g.MemUsedMiB)
		}
	}
	for _, g := range ds[0].GPUs() {
		if g.MemUsedMiB < 70*1024 || g.MemUsedMiB > 76*1024 {
			t.Fatalf("head gpu %d at %d MiB: want its weights in, waiting at the KV cache step", g.Index, g.MemUsedMiB)
		}
	}
	// Stopping the stalled node and starting it again lets both finish.
	_ = ds[1].Run(ctx, "pkill -f 'vllm serve'", nil, nil)
	if ds[1].ServerRunning() {
		t.Fatal("still running after pkill")
	}
}

func TestStartNodesRejectsAFaultNodeOutside(t *testing.T) {
	if _, err := StartNodes(context.Background(), Options{}, 2, 2); err == nil {
		t.Fatal("no error for fault node 2 of 2")
	}
}
