package sim

// The simulated host's answers to the micro and NCCL benchmark scripts.
//
// The runners (phases/micro, phases/nccl) upload the script and, for micro,
// the plan into a work dir with WriteFile after `mkdir -p DIR`, then run one
// of these command lines (PY and TORCHRUN are the campaign's prefixes, e.g.
// `python3` or `docker exec -i vllm python3`):
//
//	PY -c "$(cat DIR/profdeck-micro-HASH.py)" --plan "$(cat DIR/profdeck-micro-plan-HASH.json)" [--warmup-ms X] [--rep-ms X] [--no-calib]
//	TORCHRUN --standalone --nproc-per-node N --no-python PY -c "$(cat DIR/profdeck-nccl-HASH.py)" \
//	    --hidden H --count C --batch 1,8,… [--a2a-bytes-per-token B --tokens 1,2,…] [--repeats R] [--iters I] [--no-graph]
//
// and, to stop a cancelled script inside a container, `PY -c 'import os,signal …'`.
// The answers are JSON lines in the scripts' own format, one every
// benchStep, with timings from a model of an H200 (gpubench_model.go): HBM
// streaming at about 4.3 TB/s, dense BF16 at about 690 TFLOP/s sustained, a
// few microseconds per launch; all-reduces slow enough that a Kimi-K2.5 TP8
// decode step at M=1 spends about half of a 12.5 ms TPOT in them; an
// All-to-All whose latency jumps at 16 tokens per GPU.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote"
)

// benchStep is the pause between two simulated result lines, so panes fill
// in visibly.
var benchStep = 50 * time.Millisecond

var catArg = regexp.MustCompile(`^\$\(cat (.+)\)$`)

// isMicroScript reports whether cmd runs the micro script.
func isMicroScript(cmd string) bool {
	return strings.Contains(cmd, "profdeck-micro-") && strings.Contains(cmd, "--plan") && !strings.Contains(cmd, "--nproc-per-node")
}

// isNCCLScript reports whether cmd runs the NCCL script under torchrun.
func isNCCLScript(cmd string) bool {
	return strings.Contains(cmd, "profdeck-nccl-") && strings.Contains(cmd, "--nproc-per-node")
}

// isBenchKill reports whether cmd is the python one-liner that signals a
// cancelled script inside a container.
func isBenchKill(cmd string) bool {
	return strings.Contains(cmd, "-c") && strings.Contains(cmd, "import os,signal")
}

// benchArgs reads a script command line: the words after -c's program, as
// flag → value ("" for a bare flag), and the files named by $(cat …).
type benchArgs struct {
	flags map[string]string
	cats  []string // files read by $(cat FILE), in order
}

func parseBenchArgs(cmd string) benchArgs {
	a := benchArgs{flags: map[string]string{}}
	words := Words(cmd)
	for _, w := range words {
		if m := catArg.FindStringSubmatch(w); m != nil {
			a.cats = append(a.cats, strings.Trim(m[1], `'"`))
		}
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "--") {
			continue
		}
		if i+1 < len(words) && !strings.HasPrefix(words[i+1], "--") {
			a.flags[w] = words[i+1]
			i++
		} else {
			a.flags[w] = ""
		}
	}
	return a
}

func (a benchArgs) has(f string) bool { _, ok := a.flags[f]; return ok }

func (a benchArgs) int(f string, def int) int {
	if v, err := strconv.Atoi(a.flags[f]); err == nil {
		return v
	}
	return def
}

func (a benchArgs) ints(f string, def []int) []int {
	v, ok := a.flags[f]
	if !ok {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// catFiles reads the $(cat …) files like the shell would, failing like cat
// when one is missing.
func (d *Deployment) catFiles(ctx context.Context, cmd string, paths []string) ([][]byte, error) {
	var out [][]byte
	for _, p := range paths {
		b, err := d.ReadFile(ctx, p)
		if err != nil {
			return nil, Exit(cmd, 1, fmt.Sprintf("cat: %s: No such file or directory", p))
		}
		out = append(out, b)
	}
	return out, nil
}

// lineWriter paces JSON lines.
type lineWriter struct {
	ctx context.Context
	out func(remote.Line)
}

func (w lineWriter) emit(kind string, fields map[string]any) error {
	fields["type"] = kind
	b, _ := json.Marshal(fields)
	Stdout(w.out, string(b))
	return nil
}

func (w lineWriter) pause() error {
	t := time.NewTimer(benchStep)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return w.ctx.Err()
	case <-t.C:
		return nil
	}
}

func runMicroScript(ctx context.Context, d *Deployment, c call) error {
	cmd, out := c.cmd, c.out
	a := parseBenchArgs(cmd)
	files, err := d.catFiles(ctx, cmd, a.cats)
	if err != nil {
		return err
	}
	if len(files) < 2 {
		return Exit(cmd, 2, "profdeck-micro: error: the following arguments are required: --plan")
	}
	var plan model.Plan
	if err := json.Unmarshal(files[1], &plan); err != nil {
		return Exit(cmd, 1, "json.decoder.JSONDecodeError: "+err.Error())
	}
	w := lineWriter{ctx, out}
	d.mu.Lock()
	gpu := d.opt.GPUName
	d.mu.Unlock()
	w.emit("start", map[string]any{"pid": 4242, "ppid": 4241})
	w.emit("env", map[string]any{"gpu": gpu, "torch": simTorch, "cuda": simTorchCUDA, "sms": 132, "mem_gib": 139.8,
		"peak_gbs": 4800.0, "peak_tflops": 989.0, "copy_gbs": 4210.0,
		"engine_moe": simEngineKernel, "engine_linear": simEngineKernel})
	batches := plan.Ms()
	total := len(plan.GEMMs) + len(batches)
	calib := !a.has("--no-calib")
	if calib {
		total++
	}
	done := 0
	rng := d.benchRand()
	if calib {
		w.emit("progress", map[string]any{"done": done, "total": total, "text": "calibration: 8192^3 GEMM"})
		if err := w.pause(); err != nil {
			return err
		}
		us := 1594.0 * rng.jitter(0.01)
		db := 1594.0 * rng.jitter(0.01)
		fl := 2.0 * 8192 * 8192 * 8192
		w.emit("calib", map[string]any{"name": "gemm 8192x8192x8192 bf16", "us": us, "tflops": fl / us / 1e6, "reps": 60, "rounds": 3,
			"do_bench_us": db, "do_bench_tflops": fl / db / 1e6, "peak_pct": 100 * fl / us / 1e6 / 989})
		done++
	}
	for _, m := range batches {
		sum, saved := 0.0, 0.0
		for _, g := range plan.At(m) {
			w.emit("progress", map[string]any{"done": done, "total": total, "text": fmt.Sprintf("M=%d %s", m, g.Name)})
			if err := w.pause(); err != nil {
				return err
			}
			us, asServed := simGEMMMicros(g)
			us *= rng.jitter(0.02)
			fl, by := g.FLOPs(), g.Bytes()
			gbs := by / us / 1e3
			w.emit("gemm", map[string]any{"name": g.Name, "step_m": m, "m": g.M, "n": g.N, "k": g.K, "batch": g.Count(),
				"dtype": g.Dtype, "served": g.Served, "as_served": asServed, "per_step": g.PerStep, "us": us, "p20_us": us * 0.985, "p80_us": us * 1.02,
				"tflops": fl / us / 1e6, "gbs": gbs, "bw_pct": 100 * gbs / 4800, "step_us": us * float64(g.PerStep), "reps": 200})
			sum += us * float64(g.PerStep)
			saved += launchGapUs * float64(g.PerStep)
			done++
		}
		w.emit("progress", map[string]any{"done": done, "total": total, "text": fmt.Sprintf("M=%d whole step back-to-back", m)})
		if err := w.pause(); err != nil {
			return err
		}
		w.emit("step", map[string]any{"m": m, "sum_us": sum, "back_to_back_us": (sum - saved) * rng.jitter(0.01), "graph": true})
		done++
	}
	w.emit("done", map[string]any{"done": done, "total": total})
	return nil
}

// simEngineKernel is how the simulated micro script times the GEMMs of
// weights served quantized: with the simulated engine's own kernel, as
// served, the way the step model runs them.
const simEngineKernel = "the simulated engine's kernel, in the served format (the step model's servedMicros)"

// simGEMMMicros is one call of g as the simulated engine runs it: a GEMM
// of quantized weights in its served format (as served), any other in
// BF16. It is the step model's own figure, so micro's per-step sum and the
// profile's GEMM and MoE kernels time one step.
func simGEMMMicros(g model.GEMM) (us float64, asServed bool) {
	if g.Served != "" {
		return servedMicros(g), true
	}
	return gemmMicros(g), false
}

// workerNodeWait is a worker node's torchrun: it lasts a moment per step, then
// exits 0 without output.
func workerNodeWait(ctx context.Context, steps int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(steps) * 20 * time.Millisecond):
	}
	return nil
}

// ncclWarnings says, as the script does, which burst figures are left out:
// the captured ones with --no-graph or on one rank; and the burst between
// GEMMs, which the simulator does not model.
func ncclWarnings(w lineWriter, noGraph, graph bool) {
	switch {
	case noGraph:
		w.emit("warning", map[string]any{"text": "CUDA graph: not captured (--no-graph): no graph or between-GEMMs figure at any M"})
	case !graph:
		w.emit("warning", map[string]any{"text": "CUDA graph: not captured on one rank (NCCL moves no data, so a captured burst is empty): no graph or between-GEMMs figure at any M"})
	default:
		w.emit("warning", map[string]any{"text": "between GEMMs: not simulated (the simulator times the burst back to back and captured only): no figure at any M"})
	}
}

func runNCCLScript(ctx context.Context, d *Deployment, c call) error {
	cmd, out := c.cmd, c.out
	a := parseBenchArgs(cmd)
	if _, err := d.catFiles(ctx, cmd, a.cats); err != nil {
		return err
	}
	hidden, count := a.int("--hidden", 0), a.int("--count", -1)
	if hidden <= 0 || count < 0 {
		return Exit(cmd, 2, "profdeck-nccl: error: the following arguments are required: --hidden, --count")
	}
	local := a.int("--nproc-per-node", 1)
	d.mu.Lock()
	gpus, gpu := d.opt.GPUs, d.opt.GPUName
	d.mu.Unlock()
	if local > gpus {
		return Exit(cmd, 1, fmt.Sprintf("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: CUDA error: invalid device ordinal (rank %d of %d; the host has %d GPUs)", gpus, local, gpus))
	}
	nodes := max(a.int("--nnodes", 1), 1)
	if a.int("--node-rank", 0) > 0 {
		// Rank 0 prints the results; the other nodes' ranks print nothing.
		return workerNodeWait(ctx, len(a.ints("--batch", ncclScriptBatch)))
	}
	n := local * nodes
	batch := a.ints("--batch", ncclScriptBatch)
	bpt := a.int("--a2a-bytes-per-token", 0)
	tokens := a.ints("--tokens", []int{1, 2, 4, 8, 16, 32, 64, 128, 256})
	if bpt <= 0 {
		tokens = nil
	}
	graph := !a.has("--no-graph") && n > 1
	w := lineWriter{ctx, out}
	w.emit("start", map[string]any{"pid": 4343, "ppid": 4340})
	env := map[string]string{"NCCL_NVLS_ENABLE": "0"}
	for _, w := range Words(cmd) {
		if k, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(k, "NCCL_") {
			env[k] = v // what `env K=V torchrun` or `docker exec -e K=V` set
		}
	}
	w.emit("env", map[string]any{"gpu": gpu, "torch": simTorch, "cuda": simTorchCUDA, "nccl": "2.27.3", "nproc": n,
		"nccl_env": env})
	ncclWarnings(w, a.has("--no-graph"), graph)
	total, done := len(batch)+len(tokens), 0
	rng := d.benchRand()
	for _, m := range batch {
		w.emit("progress", map[string]any{"done": done, "total": total, "text": fmt.Sprintf("all-reduce burst M=%d", m)})
		if err := w.pause(); err != nil {
			return err
		}
		bytes := int64(m) * int64(hidden) * 2
		op := (allReduceMicros(n, bytes) + interNodeMicros(nodes, 2*bytes)) * rng.jitter(0.03)
		f := map[string]any{"m": m, "count": count, "bytes": bytes, "total_ms": op * float64(count) / 1e3, "per_op_us": op, "nproc": n}
		if graph {
			g := op * graphFactor
			f["graph_ms"], f["graph_per_op_us"] = g*float64(count)/1e3, g
		}
		w.emit("burst", f)
		done++
	}
	for _, t := range tokens {
		w.emit("progress", map[string]any{"done": done, "total": total, "text": fmt.Sprintf("all-to-all T=%d", t)})
		if err := w.pause(); err != nil {
			return err
		}
		bytes := int64(t) * int64(bpt)
		off := bytes * int64(n-local) / int64(n)
		us := (allToAllMicros(n, t, bytes) + interNodeMicros(nodes, off)) * rng.jitter(0.03)
		alg := float64(bytes) / us / 1e3
		w.emit("alltoall", map[string]any{"tokens_per_gpu": t, "bytes": bytes, "us": us, "algbw_gbs": alg,
			"busbw_gbs": alg * float64(n-1) / float64(n), "nproc": n, "nodes": nodes, "off_node_bytes": off})
		done++
	}
	w.emit("done", map[string]any{"done": done, "total": total})
	return nil
}

// ncclScriptBatch is nccl.py's own --batch when none is passed (the engine
// always passes one).
var ncclScriptBatch = []int{1, 8, 64, 128}
