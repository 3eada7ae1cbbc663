package sim

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// SGLangBanner is the first line of a simulated SGLang server's log.
const SGLangBanner = "# SIMULATED SGLang deployment (profdeck demo): no GPU, no model; every figure in this log is made up"

// EngineSGLang is Options.Engine for a deployment that serves as SGLang:
// its log is SGLang's (python -m sglang.launch_server, 0.4 to 0.5 wording)
// and its /metrics SGLang's sglang: names.
const EngineSGLang = "sglang"

// sglang reports whether the deployment serves as SGLang.
func (d *Deployment) sglang() bool { return d.opt.Engine == EngineSGLang }

// slogLocked formats an SGLang logger line: "[2025-04-03 04:46:31 TP0] msg"
// (proc "" for the launcher's own lines), in UTC as in a container.
func slogLocked(proc, msg string) string {
	ts := time.Now().UTC().Format("2006-01-02 15:04:05")
	if proc != "" {
		return fmt.Sprintf("[%s %s] %s", ts, proc, msg)
	}
	return fmt.Sprintf("[%s] %s", ts, msg)
}

// sglangScript is script's SGLang flavour: the same load (the same stages
// at the same fractions of the load time, the same memory) told in SGLang's
// words.
func (d *Deployment) sglangScript(s *serverProc) []step {
	w := &scriptWriter{d: d, s: s, head: !d.headless(), base: d.rankBase()}
	if !w.sglangStartup() {
		return w.steps // NCCL failed
	}
	w.sglangWeights()
	w.add(fracKV0, func(d *Deployment, s *serverProc, _ time.Time) { s.stage = phases.StageKVCache })
	if d.opt.FailWith == "oom" {
		w.add(fracKV0+0.008, sglangOOMFailure)
		w.sortSteps()
		return w.steps
	}
	kvTokens := d.emu.Config().KVCacheTokens // the emulator's pool, so log and /metrics agree
	w.sglangMemory(kvTokens)
	if !w.head {
		w.add(fracReady, func(d *Deployment, s *serverProc, _ time.Time) { s.stage = phases.StageReady })
		w.sortSteps()
		return w.steps
	}
	d.sglangServing(&w.steps, kvTokens)
	w.sortSteps()
	return w.steps
}

// sglangEach logs a line from every rank of the node at at, the ranks in
// no particular order.
func (w *scriptWriter) sglangEach(at float64, msg func(r int) string) {
	for _, r := range w.d.rng.Perm(w.d.opt.GPUs) {
		name := fmt.Sprintf("TP%d", w.base+r)
		w.add(at, func(d *Deployment, s *serverProc, _ time.Time) { d.logLocked(s, slogLocked(name, msg(r))) })
	}
}

// sglangGiB is a GPU's memory in GB, as SGLang's lines count it.
func (w *scriptWriter) sglangGiB() float64 { return float64(w.d.opt.GPUMemMiB) / 1024 }

// sglangStartup is the server's start-up to the weights' load: the banner,
// the server's arguments, the ranks' process groups. It reports false when
// NCCL fails there.
func (w *scriptWriter) sglangStartup() bool {
	o, head := w.d.opt, w.head
	world, total := w.d.worldSize(), w.sglangGiB()
	w.add(0, func(d *Deployment, s *serverProc, _ time.Time) {
		d.logLocked(s, SGLangBanner)
		if head {
			d.logLocked(s, slogLocked("", fmt.Sprintf("server_args=ServerArgs(model_path='%s', tokenizer_path='%s', trust_remote_code=True, "+
				"tp_size=%d, dp_size=1, port=%s, mem_fraction_static=0.88, chunked_prefill_size=8192, enable_metrics=True, log_level='info')",
				o.Model, o.Model, world, portOf(o.ServerAddr))))
		}
	})
	w.sglangEach(fracContext, func(int) string { return "Init torch distributed begin." })
	w.sglangEach(fracContext+0.002, func(int) string { return "sglang is using nccl==2.27.3" })
	if o.FailWith == "nccl" {
		w.add(fracContext+0.006, sglangNCCLFailure)
		return false
	}
	w.sglangEach(fracContext+0.006, func(int) string { return "Init torch distributed ends. mem usage=0.52 GB" })
	w.sglangEach(fracContext+0.01, func(int) string { return fmt.Sprintf("Load weight begin. avail mem=%.2f GB", total-0.6) })
	return true
}

// sglangWeights is the weights' load: the head's shard bar and each rank's
// end.
func (w *scriptWriter) sglangWeights() {
	s, head, total := w.s, w.head, w.sglangGiB()
	w.add(fracWeights0, func(d *Deployment, s *serverProc, now time.Time) {
		s.stage = phases.StageWeights
		s.barStart = now
		if head {
			d.logLocked(s, shardBar(0, s.shards, 0))
		}
	})
	for k := 1; head && k <= s.shards; k++ {
		at := fracWeights0 + (s.wEnd[0]-fracWeights0)*float64(k)/float64(s.shards)
		w.add(at, func(d *Deployment, s *serverProc, now time.Time) {
			d.logLocked(s, shardBar(k, s.shards, now.Sub(s.barStart).Seconds()))
		})
	}
	for r := range w.d.opt.GPUs {
		name := fmt.Sprintf("TP%d", w.base+r)
		w.add(math.Max(s.wEnd[r], s.wEnd[0])+0.002, func(d *Deployment, s *serverProc, now time.Time) {
			wg := d.opt.WeightsGiB - contextGiB - 0.03*float64(r%3)
			d.logLocked(s, slogLocked(name, fmt.Sprintf("Load weight end. elapsed=%.2f s, type=KimiK25ForConditionalGeneration, "+
				"dtype=torch.bfloat16, avail mem=%.2f GB, mem usage=%.2f GB.", now.Sub(s.start).Seconds(), total-0.6-wg, wg)))
		})
	}
}

// sglangMemory is the KV cache's pool of kvTokens tokens, then the CUDA
// graphs' capture.
func (w *scriptWriter) sglangMemory(kvTokens int) {
	o, total := w.d.opt, w.sglangGiB()
	kvGiB := o.KVCacheGiB * 0.96 / 2
	free := total - o.WeightsGiB - 2*kvGiB
	w.sglangEach(fracKV0+0.001, func(int) string { return "Using KV cache dtype: torch.bfloat16" })
	w.sglangEach(fracKV1, func(int) string {
		return fmt.Sprintf("KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB", kvTokens, kvGiB, kvGiB)
	})
	w.sglangEach(fracKV1+0.001, func(int) string { return fmt.Sprintf("Memory pool end. avail mem=%.2f GB", free) })
	w.add(fracGraphs0, func(d *Deployment, s *serverProc, now time.Time) {
		s.stage = phases.StageCUDAGraphs
		s.barStart = now
	})
	w.sglangEach(fracGraphs0, func(int) string {
		return fmt.Sprintf("Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB", free)
	})
	if w.head {
		graphBar(&w.steps, fmt.Sprintf("Capturing batches (bs=1 avail_mem=%.2f GB)", free-1), 36, fracGraphs0+0.001, fracGraphs1-0.005)
	}
	w.sglangEach(fracGraphs1, func(int) string {
		return fmt.Sprintf("Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB.",
			(fracGraphs1-fracGraphs0)*o.LoadTime.Seconds(), o.KVCacheGiB*0.04, free-o.KVCacheGiB*0.04)
	})
}

// sglangServing adds the head's last lines: the scheduler's pool, the HTTP
// server up, the warm-up request, ready.
func (d *Deployment) sglangServing(steps *[]step, kvTokens int) {
	add := func(at float64, run func(d *Deployment, s *serverProc, now time.Time)) {
		*steps = append(*steps, step{at: at, run: run})
	}
	seqs := d.opt.Emulator.MaxNumSeqs
	if seqs == 0 {
		seqs = 128
	}
	add(fracAPI, func(d *Deployment, s *serverProc, _ time.Time) {
		d.logLocked(s, slogLocked("TP0", fmt.Sprintf("max_total_num_tokens=%d, chunked_prefill_size=8192, max_prefill_tokens=16384, "+
			"max_running_requests=%d, context_len=262144, available_gpu_mem=%.2f GB", kvTokens, seqs, d.opt.KVCacheGiB*0.1)))
	})
	add(fracAPI+0.02, func(d *Deployment, s *serverProc, _ time.Time) {
		d.logLocked(s,
			slogLocked("", fmt.Sprintf("INFO:     Started server process [%d]", s.pid)),
			slogLocked("", "INFO:     Waiting for application startup."),
			slogLocked("", "INFO:     Application startup complete."),
			slogLocked("", "INFO:     Uvicorn running on http://0.0.0.0:"+portOf(d.opt.ServerAddr)+" (Press CTRL+C to quit)"))
	})
	add(fracReady, func(d *Deployment, s *serverProc, _ time.Time) {
		d.logLocked(s,
			slogLocked("", `INFO:     127.0.0.1:41234 - "GET /get_model_info HTTP/1.1" 200 OK`),
			slogLocked("TP0", "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0"),
			slogLocked("", `INFO:     127.0.0.1:41240 - "POST /generate HTTP/1.1" 200 OK`),
			slogLocked("", "The server is fired up and ready to roll!"))
		s.stage = phases.StageReady
		d.emu.SetReady(true)
	})
}

func sortSteps(steps []step) {
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].at < steps[b].at })
}

// sglangFailureLocked writes a scheduler's death as SGLang logs it: the
// exception with its traceback under the rank's prefix, then the
// launcher's sigquit notice; the server ends.
func (d *Deployment) sglangFailureLocked(s *serverProc, rank int, frames []string, last string) {
	lines := []string{slogLocked(fmt.Sprintf("TP%d", rank), "Scheduler hit an exception: Traceback (most recent call last):")}
	lines = append(lines, frames...)
	lines = append(lines, last, "", slogLocked("", "Received sigquit from a child process. It usually means the child failed."))
	d.logLocked(s, lines...)
	d.exitLocked(s, phases.StageFailed)
}

const sglLib = "/sgl-workspace/sglang/python/sglang/srt"

var sglangRunnerFrames = []string{
	`  File "` + sglLib + `/managers/scheduler.py", line 2632, in run_scheduler_process`,
	`    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)`,
	`  File "` + sglLib + `/managers/scheduler.py", line 311, in __init__`,
	`    self.tp_worker = TpWorkerClass(`,
	`  File "` + sglLib + `/managers/tp_worker.py", line 84, in __init__`,
	`    self.model_runner = ModelRunner(`,
	`  File "` + sglLib + `/model_executor/model_runner.py", line 242, in __init__`,
	`    self.initialize(min_per_gpu_memory)`,
}

// sglangNCCLFailure: a rank's NCCL communicator fails to initialise.
func sglangNCCLFailure(d *Deployment, s *serverProc, _ time.Time) {
	frames := append(append([]string(nil), sglangRunnerFrames[:6]...),
		`  File "`+sglLib+`/model_executor/model_runner.py", line 233, in __init__`,
		`    min_per_gpu_memory = self.init_torch_distributed()`,
		`  File "`+sglLib+`/model_executor/model_runner.py", line 566, in init_torch_distributed`,
		`    initialize_model_parallel(`,
		`  File "`+sglLib+`/distributed/device_communicators/pynccl_wrapper.py", line 380, in NCCL_CHECK`,
		`    raise RuntimeError(f"NCCL error: {error_str}")`)
	d.sglangFailureLocked(s, d.rankBase()+5%d.opt.GPUs, frames,
		"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)")
}

// sglangOOMFailure: the KV pool's allocation runs one GPU out of memory.
func sglangOOMFailure(d *Deployment, s *serverProc, _ time.Time) {
	rank := 3 % d.opt.GPUs
	frames := append(append([]string(nil), sglangRunnerFrames...),
		`  File "`+sglLib+`/model_executor/model_runner.py", line 298, in initialize`,
		`    self.init_memory_pool(`,
		`  File "`+sglLib+`/mem_cache/memory_pool.py", line 512, in _create_buffers`,
		`    torch.zeros((self.size + self.page_size, self.head_num, self.head_dim), dtype=self.store_dtype, device=self.device)`)
	d.sglangFailureLocked(s, d.rankBase()+rank, frames, fmt.Sprintf("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. "+
		"GPU %d has a total capacity of %.2f GiB of which 812.00 MiB is free.", d.opt.KVCacheGiB*0.48/61, rank, float64(d.opt.GPUMemMiB)/1024))
}
