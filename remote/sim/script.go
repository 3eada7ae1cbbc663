package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// Banner is the first line of every simulated server log.
const Banner = "# SIMULATED vLLM deployment (profdeck demo): no GPU, no model; every figure in this log is made up"

// script builds the steps of one server run: the vLLM log a TP-N load of the
// model writes (modelled on real v0.12 logs), the stage changes, and the
// failure or readiness at the end.
func (d *Deployment) script(s *serverProc) []step {
	w := &scriptWriter{d: d, s: s, head: !d.headless(), base: d.rankBase()}
	if !w.startup() {
		return w.steps // NCCL failed
	}
	w.weights()
	w.sortSteps()
	if d.opt.FailWith == "oom" {
		// torch.compile runs, then the KV cache allocation fails.
		d.compileSteps(s, &w.steps)
		w.add(fracKV0, func(d *Deployment, s *serverProc, _ time.Time) { s.stage = phases.StageKVCache })
		w.add(fracKV0+0.008, oomFailure)
		return w.steps
	}
	d.compileSteps(s, &w.steps)
	w.kvCache()
	w.graphs()
	if !w.head {
		// A headless node's workers serve once their graphs are captured.
		w.add(fracReady, func(d *Deployment, s *serverProc, _ time.Time) { s.stage = phases.StageReady })
		w.sortSteps()
		return w.steps
	}
	w.apiServer()
	w.sortSteps()
	return w.steps
}

// The processes that print the API server's and the engine core's lines.
const (
	procAPI    = "APIServer"
	procEngine = "EngineCore_DP0"
)

// scriptWriter builds one server run's steps; its methods write the parts
// of the load in order.
type scriptWriter struct {
	d     *Deployment
	s     *serverProc
	steps []step
	head  bool // the node runs the API server (a headless node runs workers only)
	base  int  // the global rank of the node's first GPU
}

func (w *scriptWriter) add(at float64, run func(d *Deployment, s *serverProc, now time.Time)) {
	w.steps = append(w.steps, step{at: at, run: run})
}

func (w *scriptWriter) logAt(at float64, proc, level, src, msg string) {
	if !w.head && (proc == procAPI || proc == procEngine) {
		return // a headless node runs workers only
	}
	w.add(at, func(d *Deployment, s *serverProc, _ time.Time) {
		d.logLocked(s, d.vlogLocked(s, proc, level, src, msg))
	})
}

func (w *scriptWriter) worker(i int) string { return fmt.Sprintf("Worker_TP%d", w.base+i) }

func (w *scriptWriter) sortSteps() {
	sort.SliceStable(w.steps, func(a, b int) bool { return w.steps[a].at < w.steps[b].at })
}

// startup is the server's start-up to the model's load: versions, arguments,
// the ranks' process groups. It reports false when NCCL fails there.
func (w *scriptWriter) startup() bool {
	d, s := w.d, w.s
	o := d.opt
	n := d.opt.GPUs
	world := d.worldSize()
	w.add(0, func(d *Deployment, s *serverProc, _ time.Time) {
		d.logLocked(s, Banner)
	})
	w.logAt(0, procAPI, "INFO", "api_server.py:1772", "vLLM API server version "+s.version)
	extra := ""
	if o.Emulator.MaxNumSeqs > 0 { // set, as --max-num-seqs would be
		extra = fmt.Sprintf(", 'max_num_seqs': %d", o.Emulator.MaxNumSeqs)
	}
	if s.apiKey != "" { // recent vLLM takes a list of keys, and logs it so
		extra += fmt.Sprintf(", 'api_key': ['%s']", s.apiKey)
	}
	w.logAt(0, procAPI, "INFO", "utils.py:253", fmt.Sprintf("non-default args: {'model_tag': '%s', 'model': '%s', 'trust_remote_code': True, 'tensor_parallel_size': %d%s}", o.Model, o.Model, world, extra))
	w.logAt(0.002, procAPI, "INFO", "model.py:631", "Resolved architecture: KimiK25ForConditionalGeneration")
	w.logAt(0.002, procAPI, "INFO", "model.py:1745", "Using max model len 262144")
	if s.profiler {
		if s.version == "0.12.0" {
			w.logAt(0.003, procAPI, "WARNING", "api_server.py:1107", "Torch Profiler is enabled in the API server. This should ONLY be used for local development!")
		} else {
			w.logAt(0.003, procAPI, "WARNING", "api_router.py:41", "Profiler with mode 'torch' is enabled in the API server. This should ONLY be used for local development!")
		}
	}
	w.logAt(0.006, procEngine, "INFO", "core.py:93", fmt.Sprintf("Initializing a V1 LLM engine (v%s) with config: model='%s', speculative_config=None, tokenizer='%s', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=262144, download_dir=None, load_format=auto, tensor_parallel_size=%d, pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, quantization=compressed-tensors, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=%s, enable_prefix_caching=True, enable_chunked_prefill=True", s.version, o.Model, o.Model, world, o.Model))
	w.logAt(0.008, procEngine, "INFO", "multiproc_executor.py:127", fmt.Sprintf("DP group leader: node_rank=0, node_rank_within_dp=0, master_addr=127.0.0.1, mq_connect_ip=127.0.0.1 (local), world_size=%d, local_world_size=%d", world, n))

	// Ranks come up in no particular order, and these lines have no prefix.
	port := 40000 + d.rng.Intn(20000)
	order := d.rng.Perm(n)
	for _, r := range order {
		w.logAt(fracContext, "", "INFO", "parallel_state.py:1200", fmt.Sprintf("world_size=%d rank=%d local_rank=%d distributed_init_method=tcp://127.0.0.1:%d backend=nccl", world, w.base+r, r, port))
	}
	w.logAt(fracContext+0.002, "", "INFO", "pynccl.py:111", "vLLM is using nccl==2.27.5")
	if o.FailWith == "nccl" {
		w.add(fracContext+0.006, ncclFailure)
		return false
	}
	for _, r := range d.rng.Perm(n) {
		w.logAt(fracContext+0.006, "", "INFO", "parallel_state.py:1408", fmt.Sprintf("rank %d in world size %d is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank %d, EP rank %d", w.base+r, world, w.base+r, w.base+r))
	}
	if s.profiler {
		w.logAt(fracContext+0.008, w.worker(0), "INFO", "gpu_worker.py:118", "Torch profiling enabled. Traces will be saved to: "+s.profDir)
	}
	for _, r := range d.rng.Perm(n) {
		w.logAt(fracContext+0.01, w.worker(r), "INFO", "gpu_model_runner.py:3467", "Starting to load model "+o.Model+"...")
	}
	for _, r := range d.rng.Perm(n) {
		w.logAt(fracContext+0.012, w.worker(r), "INFO", "cuda.py:411", "Using FLASHMLA attention backend out of potential backends: ['FLASHMLA', 'TRITON_MLA']")
	}

	return true
}

// weights is the weights' load: rank 0's shard bar and each rank's end.
func (w *scriptWriter) weights() {
	d, s := w.d, w.s
	n := d.opt.GPUs
	// Rank 0 draws the shard bar; its pace follows GPU 0's memory.
	w.add(fracWeights0, func(d *Deployment, s *serverProc, now time.Time) {
		s.stage = phases.StageWeights
		s.barStart = now
		if w.head {
			d.logLocked(s, shardBar(0, s.shards, 0))
		}
	})
	for k := 1; w.head && k <= s.shards; k++ {
		k := k
		at := fracWeights0 + (s.wEnd[0]-fracWeights0)*float64(k)/float64(s.shards)
		w.add(at, func(d *Deployment, s *serverProc, now time.Time) {
			d.logLocked(s, shardBar(k, s.shards, now.Sub(s.barStart).Seconds()))
			if k == s.shards {
				d.logLocked(s, shardBar(k, s.shards, now.Sub(s.barStart).Seconds()), fmt.Sprintf("(Worker_TP0 pid=%d) ", s.workerPIDs[0]))
			}
		})
	}
	// Every rank reports when its own weights are in, in finishing order.
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = i
	}
	sort.SliceStable(ranks, func(a, b int) bool { return s.wEnd[ranks[a]] < s.wEnd[ranks[b]] })
	for _, r := range ranks {
		r := r
		at := math.Max(s.wEnd[r], s.wEnd[0]) + 0.002
		w.add(at, func(d *Deployment, s *serverProc, now time.Time) {
			took := now.Sub(s.start).Seconds()
			if r == 0 && w.head {
				d.logLocked(s, d.vlogLocked(s, w.worker(0), "INFO", "default_loader.py:308", fmt.Sprintf("Loading weights took %.2f seconds", took*0.96)))
			}
			d.logLocked(s, d.vlogLocked(s, w.worker(r), "INFO", "gpu_model_runner.py:3549",
				fmt.Sprintf("Model loading took %.4f GiB memory and %.6f seconds", d.opt.WeightsGiB-contextGiB-0.03*float64(r%3), took)))
		})
	}
}

// kvCache is the KV cache's profile and size.
func (w *scriptWriter) kvCache() {
	d := w.d
	o := d.opt
	n := d.opt.GPUs
	kvTokens := d.emu.Config().KVCacheTokens // the emulator's capacity, so log and /metrics agree
	w.add(fracKV0, func(d *Deployment, s *serverProc, _ time.Time) { s.stage = phases.StageKVCache })
	for _, r := range d.rng.Perm(n) {
		w.logAt(fracKV0+0.001, w.worker(r), "INFO", "gpu_worker.py:356", fmt.Sprintf("Available KV cache memory: %.2f GiB", o.KVCacheGiB*0.96))
	}
	w.logAt(fracKV1, procEngine, "INFO", "kv_cache_utils.py:1307", fmt.Sprintf("GPU KV cache size: %s tokens", commas(kvTokens)))
	w.logAt(fracKV1, procEngine, "INFO", "kv_cache_utils.py:1312", fmt.Sprintf("Maximum concurrency for 262,144 tokens per request: %.2fx", float64(kvTokens)/262144))

}

// graphs is the CUDA graphs' capture: rank 0's two bars and the end.
func (w *scriptWriter) graphs() {
	d := w.d
	n := d.opt.GPUs
	// CUDA graphs: two bars drawn by rank 0 in tqdm's default format.
	w.add(fracGraphs0, func(d *Deployment, s *serverProc, now time.Time) {
		s.stage = phases.StageCUDAGraphs
		s.barStart = now
		if w.head {
			d.logLocked(s, fmt.Sprintf("(Worker_TP0 pid=%d) ", s.workerPIDs[0]))
		}
	})
	if w.head {
		graphBar(&w.steps, "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67, fracGraphs0, fracGraphs0+0.07)
		graphBar(&w.steps, "Capturing CUDA graphs (decode, FULL)", 35, fracGraphs0+0.07, fracGraphs1-0.005)
	}
	for _, r := range d.rng.Perm(n) {
		w.logAt(fracGraphs1-0.004, w.worker(r), "INFO", "custom_all_reduce.py:203", "Registering 12784 cuda graph addresses")
	}
	w.add(fracGraphs1, func(d *Deployment, s *serverProc, now time.Time) {
		d.logLocked(s, d.vlogLocked(s, w.worker(0), "INFO", "gpu_model_runner.py:3468",
			fmt.Sprintf("Graph capturing finished in %.0f secs, took %.2f GiB", math.Max(1, now.Sub(s.barStart).Seconds()), d.opt.KVCacheGiB*0.04)))
	})
}

// apiServer is the API server's start: its routes, then ready.
func (w *scriptWriter) apiServer() {
	d, s := w.d, w.s
	o := d.opt
	w.add(fracAPI, func(d *Deployment, s *serverProc, now time.Time) {
		d.logLocked(s, d.vlogLocked(s, procEngine, "INFO", "core.py:210",
			fmt.Sprintf("init engine (profile, create kv cache, warmup model) took %.2f seconds", now.Sub(s.start).Seconds()*0.3)))
	})
	w.logAt(fracAPI+0.005, procAPI, "INFO", "api_server.py:1520", "Supported tasks: ['generate']")
	w.logAt(fracAPI+0.01, procAPI, "INFO", "api_server.py:1847", "Starting vLLM API server 0 on http://0.0.0.0:"+portOf(o.ServerAddr))
	w.logAt(fracAPI+0.01, procAPI, "INFO", "launcher.py:38", "Available routes are:")
	routes := []string{"/openapi.json, Methods: GET, HEAD", "/docs, Methods: GET, HEAD", "/health, Methods: GET",
		"/load, Methods: GET", "/ping, Methods: POST", "/ping, Methods: GET", "/tokenize, Methods: POST",
		"/v1/models, Methods: GET", "/version, Methods: GET", "/v1/chat/completions, Methods: POST",
		"/v1/completions, Methods: POST", "/metrics, Methods: GET"}
	if s.profiler {
		routes = append(routes, "/start_profile, Methods: POST", "/stop_profile, Methods: POST")
	}
	for _, r := range routes {
		w.logAt(fracAPI+0.01, procAPI, "INFO", "launcher.py:46", "Route: "+r)
	}
	w.add(fracAPI+0.02, func(d *Deployment, s *serverProc, _ time.Time) {
		d.logLocked(s,
			fmt.Sprintf("(APIServer pid=%d) INFO:     Started server process [%d]", s.pid, s.pid),
			fmt.Sprintf("(APIServer pid=%d) INFO:     Waiting for application startup.", s.pid))
	})
	w.add(fracReady, func(d *Deployment, s *serverProc, now time.Time) {
		d.logLocked(s, fmt.Sprintf("(APIServer pid=%d) INFO:     Application startup complete.", s.pid))
		s.stage = phases.StageReady
		d.emu.SetReady(true)
	})
}

// compileSteps adds rank 0's torch.compile lines.
func (d *Deployment) compileSteps(s *serverProc, steps *[]step) {
	w0 := "Worker_TP0"
	lt := d.opt.LoadTime.Seconds()
	add := func(at float64, src, msg string) {
		*steps = append(*steps, step{at: at, run: func(d *Deployment, s *serverProc, _ time.Time) {
			s.stage = phases.StageCompile
			d.logLocked(s, d.vlogLocked(s, w0, "INFO", src, msg))
		}})
	}
	hash := fmt.Sprintf("%010x", d.rng.Int63n(1<<40))
	add(fracCompile, "backends.py:655", "Using cache directory: /root/.cache/vllm/torch_compile_cache/"+hash+"/rank_0_0/backbone for vLLM's torch.compile")
	add(fracCompile+0.03, "backends.py:715", fmt.Sprintf("Dynamo bytecode transform time: %.2f s", lt*0.03))
	add(fracCompile+0.12, "backends.py:319", fmt.Sprintf("Compiling a graph for compile range (1, 8192) takes %.2f s", lt*0.09))
	add(fracCompile+0.125, "monitor.py:34", fmt.Sprintf("torch.compile takes %.2f s in total", lt*0.12))
	sort.SliceStable(*steps, func(a, b int) bool { return (*steps)[a].at < (*steps)[b].at })
}

// graphBar adds the updates of one CUDA-graph capture bar between two load
// fractions.
func graphBar(steps *[]step, desc string, total int, from, to float64) {
	for k := 0; k <= total; k++ {
		k := k
		at := from + (to-from)*float64(k)/float64(total)
		*steps = append(*steps, step{at: at, run: func(d *Deployment, s *serverProc, now time.Time) {
			d.logLocked(s, tqdmDefault(desc, k, total, now.Sub(s.barStart).Seconds()))
		}})
	}
}

// shardBar is vLLM's weight-loading bar line (weight_utils._BAR_FORMAT).
func shardBar(n, total int, elapsed float64) string {
	pct := 100 * float64(n) / float64(total)
	if n == 0 || elapsed <= 0 {
		return fmt.Sprintf("Loading safetensors checkpoint shards: %3.0f%% Completed | %d/%d [00:00<?, ?it/s]", pct, n, total)
	}
	rate := float64(n) / elapsed
	return fmt.Sprintf("Loading safetensors checkpoint shards: %3.0f%% Completed | %d/%d [%s<%s, %s]",
		pct, n, total, clock(elapsed), clock(float64(total-n)/rate), rateFmt(rate))
}

// tqdmDefault is a bar in tqdm's default format: "desc:  42%|████▏     | 28/67 [00:03<00:04,  8.91it/s]".
func tqdmDefault(desc string, n, total int, elapsed float64) string {
	frac := float64(n) / float64(total)
	const width = 10
	cells := frac * width
	full := int(cells)
	bar := strings.Repeat("█", full)
	if full < width {
		parts := []string{" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
		bar += parts[int((cells-float64(full))*8)]
		bar += strings.Repeat(" ", width-full-1)
	}
	if n == 0 || elapsed <= 0 {
		return fmt.Sprintf("%s: %3.0f%%|%s| %d/%d [00:00<?, ?it/s]", desc, 100*frac, bar, n, total)
	}
	rate := float64(n) / elapsed
	return fmt.Sprintf("%s: %3.0f%%|%s| %d/%d [%s<%s, %s]", desc, 100*frac, bar, n, total,
		clock(elapsed), clock(float64(total-n)/rate), rateFmt(rate))
}

func clock(sec float64) string {
	s := int(math.Round(sec))
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

func rateFmt(rate float64) string {
	if rate < 1 {
		return fmt.Sprintf("%5.2fs/it", 1/rate)
	}
	return fmt.Sprintf("%5.2fit/s", rate)
}

func commas(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func portOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[i+1:]
	}
	return addr
}
