package sim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// The simulated torch profiler: POST /start_profile and /stop_profile, as
// vLLM registers them when started with --profiler-config (v0.13+) or
// VLLM_TORCH_PROFILER_DIR (before). Without either they answer 404, as
// vLLM's do. On stop, after a short flush, rank 0's key_averages table
// (profiler_out_0.txt) and a small gzipped trace per rank appear in the
// profiler directory; their kernel mix is a decode-heavy Kimi-K2.5 TP8 run
// on 8×H200 where all-reduce is about half of the GPU time, scaled to the
// engine steps the emulator ran while profiling.

type profState struct {
	mu       sync.Mutex
	active   bool
	started  time.Time
	start    vllmemu.State
	stopping bool
	captures int
}

// installProfiler adds the profiler endpoints to d's HTTP server: every
// simulated deployment has them, as a vLLM build does, and they answer 404
// until the server runs with the profiler enabled. Start calls it before
// the server serves; the capture's state is d.prof.
func (d *Deployment) installProfiler() {
	d.mux.HandleFunc("/start_profile", d.startProfile)
	d.mux.HandleFunc("/stop_profile", d.stopProfile)
}

// ProfilerDir returns the running server's torch profiler directory, or ""
// when it runs without the profiler.
func (d *Deployment) ProfilerDir() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.server == nil || !d.server.running || !d.server.profiler {
		return ""
	}
	return d.server.profDir
}

// profGate answers as FastAPI does for routes that are not registered (404)
// or are asked with the wrong method (405). It reports whether to go on.
func (d *Deployment) profGate(w http.ResponseWriter, r *http.Request) bool {
	if !d.ProfilerEnabled() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"detail":"Not Found"}`)
		return false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, `{"detail":"Method Not Allowed"}`)
		return false
	}
	return true
}

func (d *Deployment) startProfile(w http.ResponseWriter, r *http.Request) {
	ps := &d.prof
	if !d.profGate(w, r) {
		return
	}
	d.Log("APIServer", "INFO", "api_server.py:950", "Starting profiler...")
	ps.mu.Lock()
	ps.active, ps.started, ps.start = true, time.Now(), d.emu.State()
	ps.mu.Unlock()
	d.Log("APIServer", "INFO", "api_server.py:953", "Profiler started.")
	w.WriteHeader(http.StatusOK)
}

func (d *Deployment) stopProfile(w http.ResponseWriter, r *http.Request) {
	ps := &d.prof
	if !d.profGate(w, r) {
		return
	}
	d.Log("APIServer", "INFO", "api_server.py:964", "Stopping profiler...")
	ps.mu.Lock()
	active, started, before := ps.active, ps.started, ps.start
	ps.active = false
	ps.captures++
	n := ps.captures
	ps.mu.Unlock()
	if !active {
		// vLLM's torch profiler raises when stopped without a start; the
		// worker logs it and the endpoint still answers 200.
		d.Log("Worker_TP0", "WARNING", "wrapper.py:148", "Failed to stop profiler: Profiler is not started")
		d.Log("APIServer", "INFO", "api_server.py:967", "Profiler stopped.")
		w.WriteHeader(http.StatusOK)
		return
	}
	after := d.emu.State()
	select {
	case <-time.After(*d.opt.ProfilerFlush):
	case <-r.Context().Done():
		return
	case <-d.ctx.Done():
		return
	}
	steps := after.Steps - before.Steps
	tokens := after.GenerationTokens - before.GenerationTokens
	prompt := after.PromptTokens - before.PromptTokens
	run := newSimProfile(d.step, steps, tokens, prompt, time.Since(started), int64(n))
	dir := d.ProfilerDir()
	if dir == "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	table := run.table()
	_ = d.fs.write(path.Join(dir, "profiler_out_0.txt"), []byte(table), 0o644)
	ts := time.Now().UnixNano()
	gpus := d.opt.GPUs
	for rank := 0; rank < gpus; rank++ {
		name := fmt.Sprintf("dp0_pp0_tp%d_dcp0_ep0_rank%d.%d.pt.trace.json.gz", rank, rank, ts)
		_ = d.fs.write(path.Join(dir, name), run.trace(rank), 0o644)
	}
	d.Log("Worker_TP0", "INFO", "wrapper.py:140", "Profiler stopped successfully.")
	d.AppendLog(strings.Split(strings.TrimRight(table, "\n"), "\n")...)
	d.Log("APIServer", "INFO", "api_server.py:967", "Profiler stopped.")
	w.WriteHeader(http.StatusOK)
}

// isFindPrintf reports whether cmd is the find a capture lists the
// profiler directory with: find DIR -maxdepth N -type f -printf '%T@ %s %p\n'.
func isFindPrintf(cmd string) bool {
	return strings.HasPrefix(cmd, "find ") && strings.Contains(cmd, "-printf")
}

func runFind(ctx context.Context, d *Deployment, c call) error {
	cmd, out := c.cmd, c.out
	words := Words(strings.SplitN(cmd, "2>", 2)[0])
	if len(words) < 2 {
		return Exit(cmd, 1, "find: missing path")
	}
	root := clean(words[1])
	d.fs.mu.Lock()
	_, isDir := d.fs.dirs[root]
	type ent struct {
		p    string
		mt   time.Time
		size int
	}
	var ents []ent
	for p, f := range d.fs.files {
		if strings.HasPrefix(p, root+"/") {
			ents = append(ents, ent{p, f.modTime, len(f.data)})
		}
	}
	d.fs.mu.Unlock()
	if !isDir {
		return Exit(cmd, 1, fmt.Sprintf("find: '%s': No such file or directory", words[1]))
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].p < ents[j].p })
	for _, e := range ents {
		Stdout(out, fmt.Sprintf("%d.%09d %d %s", e.mt.Unix(), e.mt.Nanosecond(), e.size, e.p))
	}
	return nil
}
