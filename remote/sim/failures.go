package sim

import (
	"fmt"
	"time"

	"github.com/profdeck/profdeck/phases"
)

const pyLib = "/usr/local/lib/python3.12/dist-packages/vllm"

// traceback writes a Python traceback with every line re-prefixed by the
// process prefix and logger header, as vLLM's multiprocess executor does.
func (d *Deployment) tracebackLocked(s *serverProc, proc, src, head string, frames []string, last string) {
	lines := []string{d.vlogLocked(s, proc, "ERROR", src, head),
		d.vlogLocked(s, proc, "ERROR", src, "Traceback (most recent call last):")}
	for _, f := range frames {
		lines = append(lines, d.vlogLocked(s, proc, "ERROR", src, f))
	}
	lines = append(lines, d.vlogLocked(s, proc, "ERROR", src, last))
	d.logLocked(s, lines...)
}

// engineDiesLocked writes the engine core's and API server's reaction to a
// dead worker, and ends the server.
func (d *Deployment) engineDiesLocked(s *serverProc, rank int) {
	eng := "EngineCore_DP0"
	d.logLocked(s,
		d.vlogLocked(s, eng, "ERROR", "multiproc_executor.py:230", fmt.Sprintf("Worker proc VllmWorker-%d died unexpectedly, shutting down executor.", rank)),
		d.vlogLocked(s, eng, "ERROR", "core.py:843", "EngineCore failed to start."),
		d.vlogLocked(s, eng, "ERROR", "core.py:843", "Traceback (most recent call last):"),
		d.vlogLocked(s, eng, "ERROR", "core.py:843", `  File "`+pyLib+`/v1/engine/core.py", line 834, in run_engine_core`),
		d.vlogLocked(s, eng, "ERROR", "core.py:843", "    engine_core = EngineCoreProc(*args, **kwargs)"),
		d.vlogLocked(s, eng, "ERROR", "core.py:843", `  File "`+pyLib+`/v1/executor/multiproc_executor.py", line 498, in wait_for_ready`),
		d.vlogLocked(s, eng, "ERROR", "core.py:843", "    raise e from None"),
		d.vlogLocked(s, eng, "ERROR", "core.py:843", "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause."),
		fmt.Sprintf("(APIServer pid=%d) Traceback (most recent call last):", s.pid),
		fmt.Sprintf(`(APIServer pid=%d)   File "%s/entrypoints/openai/api_server.py", line 1915, in run_server`, s.pid, pyLib),
		fmt.Sprintf(`(APIServer pid=%d)   File "%s/v1/engine/utils.py", line 933, in wait_for_engine_startup`, s.pid, pyLib),
		fmt.Sprintf(`(APIServer pid=%d)     raise RuntimeError(`, s.pid),
		fmt.Sprintf(`(APIServer pid=%d) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}`, s.pid),
	)
	d.exitLocked(s, phases.StageFailed)
}

// ncclFailure: a worker's NCCL communicator fails to initialise.
func ncclFailure(d *Deployment, s *serverProc, _ time.Time) {
	rank := 5 % d.opt.GPUs
	proc := fmt.Sprintf("Worker_TP%d", rank)
	frames := []string{
		`  File "` + pyLib + `/v1/executor/multiproc_executor.py", line 722, in worker_main`,
		`    worker = WorkerProc(*args, **kwargs)`,
		`  File "` + pyLib + `/v1/worker/gpu_worker.py", line 245, in init_device`,
		`    init_worker_distributed_environment(self.vllm_config, self.rank,`,
		`  File "` + pyLib + `/distributed/parallel_state.py", line 1378, in initialize_model_parallel`,
		`    _TP = init_model_parallel_group(group_ranks,`,
		`  File "` + pyLib + `/distributed/device_communicators/pynccl.py", line 137, in __init__`,
		`    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(`,
		`  File "` + pyLib + `/distributed/device_communicators/pynccl_wrapper.py", line 277, in ncclCommInitRank`,
		`    self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm),`,
		`  File "` + pyLib + `/distributed/device_communicators/pynccl_wrapper.py", line 256, in NCCL_CHECK`,
		`    raise RuntimeError(f"NCCL error: {error_str}")`,
	}
	d.tracebackLocked(s, proc, "multiproc_executor.py:750", "WorkerProc failed to start.", frames,
		"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)")
	d.engineDiesLocked(s, rank)
}

// oomFailure: the KV cache allocation runs one GPU out of memory.
func oomFailure(d *Deployment, s *serverProc, _ time.Time) {
	rank := 3 % d.opt.GPUs
	proc := fmt.Sprintf("Worker_TP%d", rank)
	// Another process holds memory on this GPU, so the KV cache no longer
	// fits: the figures below add up the way torch reports them.
	total := float64(d.opt.GPUMemMiB)/1024 - 0.6
	want := d.opt.KVCacheGiB * 0.96
	inUse := d.opt.WeightsGiB + 0.81
	free := max(0.25, want-11.37)
	if free > total-inUse {
		free = max(0.25, (total-inUse)/3)
	}
	d.gpus[rank].usedGiB = total + 0.6 - free
	frames := []string{
		`  File "` + pyLib + `/v1/executor/multiproc_executor.py", line 745, in worker_busy_loop`,
		`    output = func(*args, **kwargs)`,
		`  File "` + pyLib + `/v1/worker/gpu_worker.py", line 412, in initialize_from_config`,
		`    self.model_runner.initialize_kv_cache(kv_cache_config)`,
		`  File "` + pyLib + `/v1/worker/gpu_model_runner.py", line 4771, in initialize_kv_cache`,
		`    kv_caches = self.initialize_kv_cache_tensors(kv_cache_config)`,
		`  File "` + pyLib + `/v1/worker/gpu_model_runner.py", line 4690, in _allocate_kv_cache_tensors`,
		`    tensor = torch.zeros(kv_cache_tensor.size, dtype=torch.int8, device=self.device)`,
	}
	last := fmt.Sprintf("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total capacity of %.2f GiB of which %s is free. "+
		"Including non-PyTorch memory, this process has %.2f GiB memory in use. Of the allocated memory %.2f GiB is allocated by PyTorch, and %.2f MiB is reserved by PyTorch but unallocated. "+
		"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
		want, rank, total, torchSize(free), inUse, inUse-0.9, 312.25)
	d.tracebackLocked(s, proc, "multiproc_executor.py:750", "WorkerProc hit an exception.", frames, last)
	d.engineDiesLocked(s, rank)
}

// torchSize formats a size the way torch's OOM message does.
func torchSize(gib float64) string {
	if gib >= 1 {
		return fmt.Sprintf("%.2f GiB", gib)
	}
	return fmt.Sprintf("%.2f MiB", gib*1024)
}
