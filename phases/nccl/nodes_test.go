package nccl_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/pyrun/pyruntest"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/sim"
)

func TestNodeCommand(t *testing.T) {
	cfg := nccl.Complete(nccl.Config{Torchrun: "docker exec -i vllm torchrun", NProc: 8, Plan: pyruntest.KimiPlan(t, 1), Tokens: []int{1},
		Nodes: make([]remote.Host, 2), MasterAddr: "10.0.0.1", MasterPort: 29511,
		Env: map[string]string{"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "mlx5_0,mlx5_1"}})
	c := nccl.NodeCommand(cfg, "/tmp/profdeck/s.py", 1)
	want := `docker exec -e NCCL_IB_HCA=mlx5_0,mlx5_1 -e NCCL_SOCKET_IFNAME=eth0 -i vllm torchrun --nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --master-port 29511 --nproc-per-node 8 --no-python python3 -c "$(cat /tmp/profdeck/s.py)" --hidden 7168`
	if !strings.HasPrefix(c, want) {
		t.Errorf("\n got %s\nwant %s…", c, want)
	}
	cfg.Torchrun = "torchrun"
	if c := nccl.NodeCommand(cfg, "/s.py", 0); !strings.HasPrefix(c, "env NCCL_IB_HCA=mlx5_0,mlx5_1 NCCL_SOCKET_IFNAME=eth0 torchrun --nnodes 2 --node-rank 0 ") {
		t.Errorf("head: %s", c)
	}
}

// recHost records the commands run on a simulated node.
type recHost struct {
	*sim.Deployment
	mu   sync.Mutex
	cmds []string
}

func (h *recHost) Run(ctx context.Context, cmd string, stdin io.Reader, out func(remote.Line)) error {
	h.mu.Lock()
	h.cmds = append(h.cmds, cmd)
	h.mu.Unlock()
	return h.Deployment.Run(ctx, cmd, stdin, out)
}

// Two simulated nodes: torchrun on each with its node rank and the NCCL
// environment, the results from rank 0 over 16 ranks, and the table says
// how much of the All-to-All leaves the node.
func TestRunAcrossTwoSimNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ds, err := sim.StartNodes(ctx, sim.Options{}, 2, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer ds[0].Close()
	defer ds[1].Close()
	var seen []string
	var mu sync.Mutex
	worker := &recHost{Deployment: ds[1]}
	nodes := []remote.Host{ds[0], worker}
	r, err := runResult(ctx, nccl.Complete(nccl.Config{Host: ds[0], Nodes: nodes, MasterAddr: "127.0.0.1", Torchrun: "torchrun", NProc: 8,
		Env: map[string]string{"NCCL_SOCKET_IFNAME": "lo"}, Plan: pyruntest.KimiPlan(t, 1, 8),
		OnText: func(l remote.Line) { mu.Lock(); seen = append(seen, l.Text); mu.Unlock() }}))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.AllToAll) != 9 || r.AllToAll[0].NProc != 16 || r.AllToAll[0].Nodes != 2 || r.AllToAll[0].OffNodeBytes != r.AllToAll[0].Bytes/2 {
		t.Fatalf("all-to-all rows %+v", r.AllToAll)
	}
	ran := false
	for _, c := range worker.cmds {
		ran = ran || strings.HasPrefix(c, "env NCCL_SOCKET_IFNAME=lo torchrun --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port 29500 ")
	}
	if !ran {
		t.Errorf("the worker node ran no torchrun of node rank 1: %q", worker.cmds)
	}
	var out bytes.Buffer
	r.WriteTables(&out)
	if !strings.Contains(out.String(), "traffic leaves the node: 8 ranks on each of 2 nodes") || !strings.Contains(out.String(), "off node") {
		t.Errorf("table:\n%s", out.String())
	}
	// The same single-node run is faster: the network costs time.
	one := &nccl.Result{}
	ch1 := make(chan phases.Event, 256)
	done1 := make(chan struct{})
	go func() {
		defer close(done1)
		for ev := range ch1 {
			one.Add(ev)
		}
	}()
	if err := nccl.Run(ctx, nccl.Complete(nccl.Config{Host: ds[0], Torchrun: "torchrun", NProc: 8, Plan: pyruntest.KimiPlan(t, 1, 8)}), &phases.Emitter{Out: ch1}); err != nil {
		t.Fatal(err)
	}
	close(ch1)
	<-done1
	if one.Bursts[0].PerOpUs >= r.Bursts[0].PerOpUs {
		t.Errorf("one node %.1f µs/op, two nodes %.1f", one.Bursts[0].PerOpUs, r.Bursts[0].PerOpUs)
	}
}
