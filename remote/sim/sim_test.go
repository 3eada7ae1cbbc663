package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

func start(t *testing.T, opt Options) (*Deployment, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	t.Cleanup(cancel)
	d, err := Start(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, ctx
}

// follower collects Follow events of the deployment's log.
type follower struct {
	mu  sync.Mutex
	evs []remote.FollowEvent
}

func (f *follower) add(ev remote.FollowEvent) { f.mu.Lock(); f.evs = append(f.evs, ev); f.mu.Unlock() }

func (f *follower) lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ev := range f.evs {
		if ev.Reset {
			out = append(out, "<reset>")
		} else {
			out = append(out, ev.Line)
		}
	}
	return out
}

func follow(t *testing.T, ctx context.Context, d *Deployment, path string) *follower {
	t.Helper()
	f := &follower{}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Follow(fctx, path, 0, f.add) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func waitUntil(t *testing.T, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", limit, what)
}

// milestones in the order a load writes them.
var milestones = []string{
	Banner,
	"vLLM API server version 0.12.0",
	"Initializing a V1 LLM engine (v0.12.0) with config:",
	"is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank",
	"Starting to load model moonshotai/Kimi-K2.5...",
	"Loading safetensors checkpoint shards:   0% Completed | 0/64 [00:00<?, ?it/s]",
	"Loading safetensors checkpoint shards: 100% Completed | 64/64",
	"Loading weights took",
	"Model loading took",
	"torch.compile takes",
	"Available KV cache memory:",
	"GPU KV cache size: 262,144 tokens", // DefaultKVCacheTokens
	"Maximum concurrency for 262,144 tokens per request: 1.00x",
	"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%",
	"Graph capturing finished in",
	"init engine (profile, create kv cache, warmup model) took",
	"Starting vLLM API server 0 on http://0.0.0.0:8000",
	"Route: /metrics, Methods: GET",
	"INFO:     Started server process",
	"INFO:     Application startup complete.",
}

func TestFullLoadWritesMilestonesInOrder(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 2 * time.Second, AutoStart: true})
	f := follow(t, ctx, d, d.Options().LogPath)
	waitUntil(t, "ready", 10*time.Second, d.Ready)
	waitUntil(t, "the startup line", 2*time.Second, func() bool {
		l := f.lines()
		return len(l) > 0 && strings.Contains(l[len(l)-1], "Application startup complete.")
	})
	lines := f.lines()
	i := 0
	for _, l := range lines {
		if i < len(milestones) && strings.Contains(l, milestones[i]) {
			i++
		}
	}
	if i < len(milestones) {
		t.Fatalf("milestone %q missing or out of order in %d lines", milestones[i], len(lines))
	}
	count := func(s string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, s) {
				n++
			}
		}
		return n
	}
	if n := count("Model loading took 74."); n != 8 {
		t.Errorf("want one 'Model loading took' per rank, got %d", n)
	}
	for r := 0; r < 8; r++ {
		if count(fmt.Sprintf("(Worker_TP%d pid=", r)) == 0 {
			t.Errorf("no line from Worker_TP%d", r)
		}
	}
	if lines[0] != Banner {
		t.Errorf("first line %q", lines[0])
	}
	if d.Stage() != phases.StageReady || !d.ServerRunning() {
		t.Errorf("stage %q running %v", d.Stage(), d.ServerRunning())
	}
	// GPUs hold weights plus KV cache when ready.
	for _, g := range d.GPUs() {
		want := 122778 // (74.9 + 45) GiB in MiB
		if g.MemUsedMiB < want-2 || g.MemUsedMiB > want+2 {
			t.Errorf("GPU %d: %d MiB, want %d", g.Index, g.MemUsedMiB, want)
		}
	}
}

// httpVia returns a client whose connections go through the host.
func httpVia(h remote.Host) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: h.DialContext}}
}

func TestDialOnlyWhileServerRuns(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 400 * time.Millisecond, Seed: 7})
	_, err := d.DialContext(ctx, "tcp", "127.0.0.1:8000")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("before launch: want connection refused, got %v", err)
	}
	launch := `nohup setsid sh -c 'vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --trust-remote-code' > /var/log/vllm/server.log 2>&1 < /dev/null & echo $!`
	out, err := remote.Output(ctx, d, launch)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid != d.ServerPID() {
		t.Fatalf("launch printed %q, server pid %d", out, d.ServerPID())
	}
	if d.ProfilerEnabled() {
		t.Fatal("profiler enabled without the flag")
	}
	c, err := d.DialContext(ctx, "tcp", "localhost:8000")
	if err != nil {
		t.Fatalf("while running: %v", err)
	}
	c.Close()
	for _, addr := range []string{"127.0.0.1:8001", "10.1.2.3:8000", "127.0.0.1:22"} {
		if _, err := d.DialContext(ctx, "tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("%s: want refused, got %v", addr, err)
		}
	}
	waitUntil(t, "ready", 5*time.Second, d.Ready)
	resp, err := httpVia(d).Get("http://127.0.0.1:8000/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/health: %d", resp.StatusCode)
	}
	// The request shows in the server log as uvicorn's access line.
	waitUntil(t, "access log line", 2*time.Second, func() bool {
		b, _ := d.ReadFile(ctx, "/var/log/vllm/server.log")
		return strings.Contains(string(b), `"GET /health HTTP/1.1" 200 OK`)
	})

	if err := d.Run(ctx, "kill -0 "+out, nil, nil); err != nil {
		t.Fatalf("kill -0 on the live server: %v", err)
	}
	if err := d.Run(ctx, "kill -TERM -- -"+strings.TrimSpace(out), nil, nil); err != nil {
		t.Fatalf("kill the group: %v", err)
	}
	if d.ServerRunning() {
		t.Fatal("still running after kill")
	}
	var ee *remote.ExitError
	if err := d.Run(ctx, "kill -0 "+out, nil, nil); !errors.As(err, &ee) || ee.Status != 1 {
		t.Fatalf("kill -0 after stop: %v", err)
	}
	if _, err := d.DialContext(ctx, "tcp", "127.0.0.1:8000"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after stop: want refused, got %v", err)
	}
	if _, err := http.Get(d.URL() + "/health"); err == nil {
		t.Fatal("the loopback URL still answers after stop")
	}
	// Memory goes back to zero within the release time.
	waitUntil(t, "memory released", releaseTime+time.Second, func() bool {
		for _, g := range d.GPUs() {
			if g.MemUsedMiB != 0 {
				return false
			}
		}
		return true
	})
	b, _ := d.ReadFile(ctx, "/var/log/vllm/server.log")
	if !strings.Contains(string(b), "Shutting down FastAPI HTTP server.") {
		t.Error("no shutdown lines after SIGTERM")
	}
}

// parseCSV parses nvidia-smi --format=csv output with a header.
func parseCSV(t *testing.T, out string) (header []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header = strings.Split(lines[0], ", ")
	for _, l := range lines[1:] {
		f := strings.Split(l, ", ")
		if len(f) != len(header) {
			t.Fatalf("row %q has %d fields, header %d", l, len(f), len(header))
		}
		rows = append(rows, f)
	}
	return header, rows
}

func TestNvidiaSMIFormatsAndMemoryGrows(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 1500 * time.Millisecond, AutoStart: true})
	out, err := remote.Output(ctx, d, "nvidia-smi --query-gpu=index,name,memory.used,memory.total,utilization.gpu --format=csv")
	if err != nil {
		t.Fatal(err)
	}
	h, rows := parseCSV(t, out)
	// The exact header of a real driver (fixtures/nvidia-smi-09).
	if strings.Join(h, ", ") != "index, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%]" {
		t.Fatalf("header %q", h)
	}
	if len(rows) != 8 || rows[3][0] != "3" || rows[3][1] != "NVIDIA H200" || rows[3][3] != "143771 MiB" || !strings.HasSuffix(rows[3][4], " %") {
		t.Fatalf("rows %q", rows)
	}
	// Sample memory.used until ready: it only grows, GPUs differ on the way.
	prev := make([]int, 8)
	sawSpread := false
	for !d.Ready() {
		out, err := remote.Output(ctx, d, "nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 8 {
			t.Fatalf("got %d lines", len(lines))
		}
		lo, hi := 1<<30, 0
		for i, l := range lines {
			idx, mem, ok := strings.Cut(l, ", ")
			n, err := strconv.Atoi(mem)
			if !ok || idx != strconv.Itoa(i) || err != nil {
				t.Fatalf("bad line %q", l)
			}
			if n < prev[i] {
				t.Fatalf("GPU %d memory went down while loading: %d -> %d", i, prev[i], n)
			}
			prev[i] = n
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > 1024 {
			sawSpread = true
		}
		time.Sleep(20 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatal("never ready")
		}
	}
	if !sawSpread {
		t.Error("GPUs loaded in lock step; want slightly different rates")
	}
	if prev[0] < 120000 {
		t.Errorf("GPU 0 at %d MiB when ready", prev[0])
	}

	out, err = remote.Output(ctx, d, "nvidia-smi -L")
	if err != nil || !strings.HasPrefix(out, "GPU 0: NVIDIA H200 (UUID: GPU-") || strings.Count(out, "\n") != 8 {
		t.Fatalf("-L: %q %v", out, err)
	}
	out, err = remote.Output(ctx, d, "nvidia-smi -i 2,5 --query-gpu=index,pci.bus_id,driver_version,temperature.gpu,memory.free --format=csv,noheader")
	if err != nil || !strings.HasPrefix(out, "2, 00000000:3B:00.0, 580.105.08, ") || !strings.Contains(out, "\n5, ") || !strings.HasSuffix(strings.TrimSpace(out), " MiB") {
		t.Fatalf("-i: %q %v", out, err)
	}
	var ee *remote.ExitError
	if _, err := remote.Output(ctx, d, "nvidia-smi --query-gpu=bogus --format=csv"); !errors.As(err, &ee) || !strings.Contains(ee.Stderr, `Field "bogus" is not a valid field to query.`) {
		t.Fatalf("bad field: %v", err)
	}
}

func TestNvidiaSMITableIsRealistic(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 300 * time.Millisecond, AutoStart: true})
	waitUntil(t, "ready", 5*time.Second, d.Ready)
	out, err := remote.Output(ctx, d, "nvidia-smi")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	rows := 0
	for _, l := range lines[1 : len(lines)-1] {
		if len(l) != 0 && len(l) != 91 {
			t.Errorf("line of width %d (want 91 as driver 580 prints): %q", len(l), l)
		}
		if reGPURow.MatchString(l) {
			rows++
		}
		if m := reMemRow.FindStringSubmatch(l); m != nil && m[2] != "143771" {
			t.Errorf("memory row %q", l)
		}
	}
	if rows != 8 {
		t.Errorf("%d GPU rows match the parser's regex, want 8", rows)
	}
	if !strings.Contains(lines[len(lines)-1], "SIMULATED") {
		t.Errorf("last line %q does not say SIMULATED", lines[len(lines)-1])
	}
	if !strings.Contains(out, "VLLM::Worker_TP7") {
		t.Error("no worker processes listed")
	}
}

func TestStallFreezesMemoryAndLog(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: time.Second, AutoStart: true, StallAtGiB: 30})
	waitUntil(t, "every GPU at the stall", 5*time.Second, func() bool {
		for _, g := range d.GPUs() {
			if g.MemUsedMiB != 30*1024 {
				return false
			}
		}
		return true
	})
	log1, _ := d.ReadFile(ctx, d.LogPath())
	time.Sleep(1200 * time.Millisecond) // longer than the whole load
	log2, _ := d.ReadFile(ctx, d.LogPath())
	if string(log1) != string(log2) {
		t.Fatalf("the log kept growing during a stall:\n%s", strings.TrimPrefix(string(log2), string(log1)))
	}
	for _, g := range d.GPUs() {
		if g.MemUsedMiB != 30*1024 {
			t.Fatalf("GPU %d moved to %d MiB", g.Index, g.MemUsedMiB)
		}
	}
	if strings.Contains(string(log2), "Loading weights took") || d.Ready() || !d.ServerRunning() {
		t.Fatal("a stalled load finished or exited")
	}
	if !strings.Contains(string(log2), "Loading safetensors checkpoint shards:") {
		t.Fatal("the stall happened before the shard bar started")
	}
}

func TestStallOnlyWhenProfiling(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 300 * time.Millisecond, AutoStart: true, StallAtGiB: 75.8, StallWhenProfiling: true, StallOnce: true})
	waitUntil(t, "plain launch ready", 5*time.Second, d.Ready)
	launch := `VLLM_TORCH_PROFILER_DIR=/tmp/prof nohup vllm serve moonshotai/Kimi-K2.5 -tp 8 > /var/log/vllm/server.log 2>&1 &`
	if _, err := remote.Output(ctx, d, launch); err != nil {
		t.Fatal(err)
	}
	if !d.ProfilerEnabled() {
		t.Fatal("VLLM_TORCH_PROFILER_DIR= did not enable the profiler")
	}
	waitUntil(t, "stall at 75.8 GiB", 5*time.Second, func() bool {
		for _, g := range d.GPUs() {
			if g.MemUsedMiB != 77619 { // 75.8 GiB
				return false
			}
		}
		return true
	})
	b, _ := d.ReadFile(ctx, d.LogPath())
	if !strings.Contains(string(b), "Torch profiling enabled. Traces will be saved to: /tmp/prof") {
		t.Error("no profiler line in the log")
	}
	// With StallOnce, the restart after the stall loads.
	if _, err := remote.Output(ctx, d, "kill -- -"+strconv.Itoa(d.ServerPID())+"; "+launch); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second profiler launch ready", 5*time.Second, d.Ready)
	if !d.ProfilerEnabled() {
		t.Fatal("profiler off after the restart")
	}
}

func TestRestartReplacesLog(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 300 * time.Millisecond, AutoStart: true})
	f := follow(t, ctx, d, d.Options().LogPath)
	waitUntil(t, "ready", 5*time.Second, d.Ready)
	first := d.ServerPID()
	launch := `nohup setsid sh -c 'vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --profiler-config '"'"'{"profiler": "torch", "torch_profiler_dir": "/data/prof"}'"'"'' > /var/log/vllm/server.log 2>&1 < /dev/null & echo $!`
	if _, err := remote.Output(ctx, d, launch); err != nil {
		t.Fatal(err)
	}
	if d.ServerPID() == first || !d.ProfilerEnabled() {
		t.Fatalf("pid %d (was %d), profiler %v", d.ServerPID(), first, d.ProfilerEnabled())
	}
	waitUntil(t, "ready again", 5*time.Second, d.Ready)
	waitUntil(t, "reset and a second banner", 2*time.Second, func() bool {
		l := f.lines()
		for i, s := range l {
			if s == "<reset>" {
				return i+1 < len(l) && l[i+1] == Banner
			}
		}
		return false
	})
	b, _ := d.ReadFile(ctx, d.LogPath())
	if strings.Count(string(b), Banner) != 1 || !strings.Contains(string(b), "Route: /stop_profile, Methods: POST") ||
		!strings.Contains(string(b), "Traces will be saved to: /data/prof") {
		t.Fatalf("the new log is not a fresh profiler-enabled load:\n%.400s", b)
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct{ kind, want string }{
		{"oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"},
		{"nccl", "RuntimeError: NCCL error: unhandled system error"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			d, ctx := start(t, Options{LoadTime: 400 * time.Millisecond, AutoStart: true, FailWith: tc.kind})
			waitUntil(t, "failure", 5*time.Second, func() bool { return d.Stage() == phases.StageFailed })
			if d.ServerRunning() {
				t.Fatal("still running after a failure")
			}
			b, _ := d.ReadFile(ctx, d.LogPath())
			log := string(b)
			for _, s := range []string{tc.want, "EngineCore failed to start.", "RuntimeError: Engine core initialization failed. See root cause above."} {
				if !strings.Contains(log, s) {
					t.Errorf("log lacks %q", s)
				}
			}
			waitUntil(t, "memory released", releaseTime+time.Second, func() bool { return d.GPUs()[3].MemUsedMiB == 0 })
		})
	}
	if _, err := Start(context.Background(), Options{FailWith: "segfault"}); err == nil {
		t.Fatal("an unknown FailWith was accepted")
	}
}

func TestCommands(t *testing.T) {
	d, ctx := start(t, Options{})
	// Two rows found by their line, ahead of the table: the first that
	// matches runs, also inside sh -c and env.
	mytool := func(cmd string) bool { return strings.HasPrefix(cmd, "mytool") }
	d.commands = append([]command{
		{name: "test-first", line: mytool, help: "test", run: func(_ context.Context, _ *Deployment, c call) error {
			Stdout(c.out, "first "+c.cmd)
			return nil
		}},
		{name: "test-second", line: func(cmd string) bool { return mytool(cmd) || cmd == "other" }, help: "test",
			run: func(_ context.Context, _ *Deployment, c call) error { return Exit(c.cmd, 4, "second") }},
	}, d.commands...)
	run := func(cmd string, stdin io.Reader) (string, error) {
		var b strings.Builder
		err := d.Run(ctx, cmd, stdin, func(l remote.Line) {
			if l.Stream == remote.Stdout {
				b.WriteString(l.Text + "\n")
			}
		})
		return b.String(), err
	}
	var ee *remote.ExitError
	for _, tc := range []struct {
		cmd, stdin, want string
		status           int
	}{
		{"mytool --x", "", "first mytool --x\n", 0},
		{"other", "", "", 4},
		{"echo hello   world", "", "hello world\n", 0},
		{"mkdir -p '/data/my dir' && cat > '/data/my dir/a b.txt'", "one\ntwo\n", "", 0},
		{"cat '/data/my dir/a b.txt'", "", "one\ntwo\n", 0},
		{"tail -c +5 '/data/my dir/a b.txt'", "", "two\n", 0},
		{"ls /data", "", "my dir\n", 0},
		{"test -e /data/nothing || echo missing", "", "missing\n", 0},
		{"test -e '/data/my dir/a b.txt' && echo there", "", "there\n", 0},
		{"cat /data/nothing", "", "", 1},
		{"echo a > /tmp/x; echo b >> /tmp/x; cat /tmp/x | tail -n 1", "", "b\n", 0},
		{"date +%s", "", strconv.FormatInt(time.Now().Unix(), 10)[:8], 0},
		{"uname -a", "", "Linux", 0},
		{"true", "", "", 0},
		{"frobnicate --all", "", "", 127},
		{"kill -0 12345", "", "", 1},
		{"sh -c 'echo from sh && mytool y'", "", "from sh\nfirst mytool y\n", 0},
		{"env A=1 B=2 mytool z", "", "first mytool z\n", 0},
		{"timeout 0.05 sleep 5", "", "", 124},
		{"timeout 5 echo quick", "", "quick\n", 0},
		{"cd /nowhere && echo no", "", "", 2},
		{"docker stop vllm", "", "", 1},
		{"help | grep -c .", "", strconv.Itoa(len(d.commands)) + "\n", 0},
		{"help | grep '^which '", "", "which            which NAME\n", 0},
	} {
		var in io.Reader
		if tc.stdin != "" {
			in = strings.NewReader(tc.stdin)
		}
		out, err := run(tc.cmd, in)
		status := 0
		if errors.As(err, &ee) {
			status = ee.Status
		} else if err != nil {
			t.Fatalf("%s: %v", tc.cmd, err)
		}
		if status != tc.status || !strings.HasPrefix(out, tc.want) {
			t.Errorf("%s: got %q status %d, want %q status %d", tc.cmd, out, status, tc.want, tc.status)
		}
	}
	_, err := run("frobnicate --all", nil)
	if !errors.As(err, &ee) || ee.Stderr != "sh: frobnicate: command not found (simulated host)" {
		t.Errorf("unknown command error: %v", err)
	}
	// Cancellation stops a looping command.
	cctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	n := 0
	err = d.Run(cctx, "nvidia-smi --query-gpu=memory.used --format=csv,noheader -lms 20", nil, func(remote.Line) { n++ })
	if !errors.Is(err, context.DeadlineExceeded) || n < 16 {
		t.Errorf("loop: %v after %d lines", err, n)
	}
}

// The command table: one row per name, each with its handler and its help;
// every row called by name is reached by that name.
func TestCommandTable(t *testing.T) {
	d, ctx := start(t, Options{})
	seen := map[string]bool{}
	for _, c := range d.commands {
		if c.name == "" || c.run == nil || c.help == "" || seen[c.name] {
			t.Errorf("row %q: a name, a handler and a help each, once (seen %v)", c.name, seen[c.name])
		}
		seen[c.name] = true
		if c.line != nil {
			continue
		}
		err := d.Run(ctx, remote.Quote(c.name)+" --profdeck-table-test", nil, nil)
		var ee *remote.ExitError
		if errors.As(err, &ee) && ee.Status == 127 && strings.Contains(ee.Stderr, "sh: "+c.name+": command not found") {
			t.Errorf("%s: not found by its name", c.name)
		}
	}
}

// An endpoint added after Start is served.
func TestHandle(t *testing.T) {
	d, _ := start(t, Options{LoadTime: 200 * time.Millisecond, AutoStart: true})
	d.Handle("/hooked", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	waitUntil(t, "ready", 5*time.Second, d.Ready)
	resp, err := http.Get(d.URL() + "/hooked")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Fatalf("hooked endpoint: %d", resp.StatusCode)
	}
}

func TestSplitAndWords(t *testing.T) {
	parts, ops := splitList(`a 'b && c' && d || e; f "g;h"`)
	if strings.Join(parts, "|") != `a 'b && c'|d|e|f "g;h"` || strings.Join(ops, " ") != "&& || ;" {
		t.Fatalf("%q %q", parts, ops)
	}
	w := Words(`cat '/a b/c' "d \"e\" $f" g\ h`)
	if strings.Join(w, "|") != `cat|/a b/c|d "e" $f|g h` {
		t.Fatalf("%q", w)
	}
	for _, s := range []string{"plain", "a b", `it's "x"`, "$(rm -rf /)", ""} {
		if got := Words("cat " + remote.Quote(s)); len(got) != 2 || got[1] != s {
			t.Errorf("Quote(%q) split as %q", s, got)
		}
	}
	if got := launchLog(`nohup setsid sh -c 'vllm serve m > /inner.log' > /var/log/x.log 2>&1 < /dev/null & echo $!`); got != "/var/log/x.log" {
		t.Errorf("launch log %q", got)
	}
	if got := launchLog(`sh -c 'vllm serve m > /inner.log 2>&1' &`); got != "/inner.log" {
		t.Errorf("launch log %q", got)
	}
	if got := launchLog(`nohup setsid sh -c 'vllm serve m' > '/var/log/my logs/s.log' 2>&1 < /dev/null & echo $!`); got != "/var/log/my logs/s.log" {
		t.Errorf("quoted launch log %q", got)
	}
	for cmd, want := range map[string]bool{
		"vllm serve m --port 8000":                                                true,
		"env A=b python3 -m vllm.entrypoints.openai.api_server --model m":         true,
		"docker run -d --name vllm --gpus all vllm/vllm-openai:v0.12.0 --model m": true,
		"pkill -f 'vllm serve'":                                                   false,
		"pgrep -f 'vllm serve'":                                                   false,
		"docker rm vllm >/dev/null 2>&1 || true":                                  false,
	} {
		if isLaunch(cmd) != want {
			t.Errorf("isLaunch(%q) = %v", cmd, !want)
		}
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := Start(ctx, Options{LoadTime: 200 * time.Millisecond, AutoStart: true})
	if err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Follow(fctx, d.LogPath(), 0, func(remote.FollowEvent) {}) }()
	waitUntil(t, "ready", 5*time.Second, d.Ready)
	resp, err := httpVia(d).Get("http://127.0.0.1:8000/health")
	if err == nil {
		resp.Body.Close()
	}
	fcancel()
	<-done
	d.Close()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// The table regexes of the shared format notes (section 7).
var (
	reGPURow = regexp.MustCompile(`^\|\s+(?P<idx>\d+)\s+(?P<name>.+?)\s+(?P<pm>On|Off)\s+\|\s+(?P<bus>[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d)\s+(?P<disp>On|Off)\s+\|\s+(?P<ecc>\S+)\s+\|$`)
	reMemRow = regexp.MustCompile(`^\|\s*(?:\d+%|N/A)\s+(?:\d+C)\s+(?:P\d+)\s+(?:\d+W|N/A)\s*/\s*(?:\d+W|N/A)\s*\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\d+)%\s+(.+?)\s*\|$`)
)

func TestDockerLifecycle(t *testing.T) {
	d, ctx := start(t, Options{LoadTime: 300 * time.Millisecond})
	launch := `nohup setsid sh -c 'docker run -e VLLM_TORCH_PROFILER_DIR=/prof --name vllm --gpus all vllm/vllm-openai:v0.12.0 --model moonshotai/Kimi-K2.5 -tp 8' > /var/log/vllm/server.log 2>&1 < /dev/null & echo $!`
	if _, err := remote.Output(ctx, d, "docker rm vllm >/dev/null 2>&1 || true"); err != nil {
		t.Fatalf("docker rm of no container: %v", err)
	}
	if _, err := remote.Output(ctx, d, launch); err != nil || !d.ServerRunning() || !d.ProfilerEnabled() {
		t.Fatalf("docker launch: %v running %v profiler %v", err, d.ServerRunning(), d.ProfilerEnabled())
	}
	var ee *remote.ExitError
	if _, err := remote.Output(ctx, d, "docker rm vllm"); !errors.As(err, &ee) || !d.ServerRunning() {
		t.Fatalf("docker rm of a running container: %v, running %v", err, d.ServerRunning())
	}
	if _, err := remote.Output(ctx, d, "docker stop other"); !errors.As(err, &ee) || !d.ServerRunning() {
		t.Fatalf("docker stop of another name: %v", err)
	}
	out, err := remote.Output(ctx, d, "docker stop vllm")
	if err != nil || strings.TrimSpace(out) != "vllm" || d.ServerRunning() {
		t.Fatalf("docker stop: %q %v running %v", out, err, d.ServerRunning())
	}
}
