package vllmlog

import (
	"fmt"
	"strings"
	"testing"
)

// read parses a log given as lines.
func read(t *testing.T, lines ...string) *Summary {
	t.Helper()
	s, err := Read(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func num[T int | float64](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

// TestDeploymentFacts: what the log says of the deployment is read, and
// nothing it does not say.
func TestDeploymentFacts(t *testing.T) {
	s := read(t,
		`INFO 08-11 10:45:18 [__init__.py:235] Automatically detected platform rocm.`,
		`ERROR 08-11 10:45:19 [x.py:1] HIP error: invalid argument`,
		`INFO 08-11 10:45:30 [core.py:71] Initializing a V1 LLM engine (v0.10.0) with config: model='m', speculative_draft_tensor_parallel_size=None, tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=4, quantization=fp8, quantization_param_path=None, device_config=cuda`,
		`(Worker_TP0 pid=1) INFO 09-29 09:51:37 [monitor.py:34] torch.compile takes 14.45 s in total`,
		`(Worker_TP1 pid=2) INFO 09-29 09:51:37 [monitor.py:34] torch.compile takes 16.12 s in total`,
		`ROCM used to build PyTorch: 6.4.43482-0f2d60242`,
		`HIP runtime version: 6.4.43482`,
		`Nvidia driver version: Could not collect`,
		`NCCL version 2.21.5+cuda12.4`,
	)
	got := fmt.Sprintf("platform=%s tp=%s pp=%s dp=%s ep=%s quant=%s compile=%s rocm=%s cuda=%s driver=%s",
		str(s.Platform), num(s.TP), num(s.PP), num(s.DP), num(s.EP), str(s.Quantization), num(s.CompileSeconds),
		str(s.ROCmVersion), str(s.CUDAVersion), str(s.DriverVersion))
	want := "platform=rocm tp=2 pp=1 dp=4 ep=<nil> quant=fp8 compile=16.12 rocm=6.4.43482 cuda=12.4 driver=<nil>"
	if got != want {
		t.Errorf("read %s\nwant %s", got, want)
	}
	none := read(t, `INFO 04-12 01:01:06 [core.py:1] Initializing a V1 LLM engine (v0.9.0) with config: quantization=None, tensor_parallel_size=1`)
	if none.Quantization != nil || none.Platform != nil || none.CompileSeconds != nil {
		t.Errorf("facts the log does not say were read: quant=%s platform=%s", str(none.Quantization), str(none.Platform))
	}
}

// TestPlatformFromItsErrors: a platform is read from an error or module
// only where no line names it.
func TestPlatformFromItsErrors(t *testing.T) {
	for line, want := range map[string]string{
		`INFO 06-09 06:57:15 __init__.py:198] Platform plugin ascend is activated`:                              "npu",
		`(VllmWorkerProcess pid=2) ERROR 03-05 07:15:39 x.py:1] RuntimeError: NPU out of memory. Tried 2 MiB`:   "npu",
		`WARNING 01-02 04:16:29 _logger.py:68] CUDA graph is not supported on XPU, fallback to the eager mode.`: "xpu",
		`INFO 12-12 11:19:09 ray_tpu_executor.py:270] # TPU blocks: 18736, # CPU blocks: 11912`:                 "tpu",
		`WARNING 04-07 08:49:47 [arg_utils.py:1765] device type=cpu is not supported by the V1 Engine.`:         "cpu",
		`INFO 09-02 06:44:03 [__init__.py:245] No platform detected, vLLM is running on UnspecifiedPlatform`:    "<nil>",
	} {
		if got := str(read(t, line).Platform); got != want {
			t.Errorf("%s: platform %s, want %s", line, got, want)
		}
	}
}

// TestFailureWhenAndComponent: a failure says when it came and what
// failed; any error line or traceback from the engine is a failure.
func TestFailureWhenAndComponent(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		want  string // kind/when/component
	}{
		{"after ready", []string{
			`(APIServer pid=1) INFO 11-04 09:40:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000`,
			`ERROR 11-04 09:45:23 [core.py:588] EngineCore encountered a fatal error.`,
		}, "engine_failed/serving/engine_core"},
		{"engine step", []string{
			`ERROR 11-04 09:45:23 [core.py:588] Traceback (most recent call last):`,
			`ERROR 11-04 09:45:23 [core.py:588]   File "/v/vllm/v1/engine/core.py", line 606, in run_busy_loop`,
		}, "engine_failed/serving/engine_core"},
		{"worker oom", []string{
			`(VllmWorkerProcess pid=2421) ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.88 GiB.`,
		}, "oom//worker"},
		{"loader", []string{
			`Loading fastsafetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]`,
			`(Worker_TP0 pid=1363) [PG0] 2026-07-03 07:57:03.918 - Producer batch 1 skipped: error_info-Producer batch 0 failed: 'data_offsets'`,
		}, "unknown/startup/loader"},
		{"bare error line", []string{
			`(RayWorkerWrapper pid=322, ip=10.0.3.32) ERROR 04-29 13:38:53 [worker_base.py:620] `,
		}, "unknown//worker"},
		{"traceback cut before its exception", []string{
			`Traceback (most recent call last):`,
			`  File "/k/huggingfaceserver/__main__.py", line 164, in <module>`,
			`    parser = maybe_add_vllm_cli_parser(parser)`,
		}, "unknown/startup/api_server"},
		{"profile run", []string{
			`[rank0]:   File "/o/vllm/worker/worker.py", line 179, in determine_num_available_blocks`,
			`[rank0]:     self.model_runner.profile_run()`,
		}, "engine_failed/startup/worker"},
	}
	for _, c := range cases {
		s := read(t, c.lines...)
		if s.Failure == nil || s.State != StateFailed {
			t.Errorf("%s: state %s, want failed", c.name, s.State)
			continue
		}
		if got := s.Failure.Kind + "/" + s.Failure.When + "/" + s.Failure.Component; got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestPastedWrappers: lines pasted through Markdown, HTML, log viewers and
// other loggers read as the engine's own.
func TestPastedWrappers(t *testing.T) {
	for _, line := range []string{
		`> INFO 03-31 07:47:34 [loader.py:447] Loading weights took 2.84 seconds`,
		"`INFO 03-31 07:47:34 [loader.py:447] Loading weights took 2.84 seconds`",
		`│ INFO 03-31 07:47:34 [loader.py:447] Loading weights took 2.84 seconds      │`,
		`<font color="#2AA1B3"><b>(VllmWorker TP0 pid=19250)</b></font> INFO 03-31 07:47:34 [loader.py:447] Loading weights took 2.84 seconds`,
		`kserve-container INFO 03-31 07:47:34 [loader.py:447] Loading weights took 2.84 seconds`,
		`[pod/vllm-0/vllm] INFO 03-31 07:47:34 [loader.py:447] Loading weights took 2.84 seconds`,
		`2025-06-27 12:57:51,690 - __main__ - INFO - INFO 03-31 07:47:34 [loader.py:447] Loading weights took 2.84 seconds`,
		`2025-12-10T13:50:14.788089Z  INFO default_loader.load_weights: Loading weights took 2.84 seconds`,
	} {
		s := read(t, line)
		if s.WeightsReadSeconds == nil || *s.WeightsReadSeconds != 2.84 {
			t.Errorf("%s: weights read %s, want 2.84", line, num(s.WeightsReadSeconds))
		}
	}
}

// TestGluedWorkerPrefixes: two workers' prefixes printed into one line
// are two ranks.
func TestGluedWorkerPrefixes(t *testing.T) {
	s := read(t, `(VllmWorker rank=1 pid=57317) (VllmWorker rank=0 pid=57316) INFO 06-04 11:40:26 [shm_broadcast.py:251] vLLM message queue communication handle`).Finish()
	if len(s.Ranks) != 2 {
		t.Errorf("ranks %v, want 2", s.Ranks)
	}
}

// TestRequestErrorWhileServing: the API server's error about one request
// after ready is not the server failing; the engine dying is.
func TestRequestErrorWhileServing(t *testing.T) {
	ready := `(APIServer pid=1) INFO 11-04 09:40:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000`
	s := read(t, ready,
		`(APIServer pid=1) ERROR 11-04 09:41:00 [serving_chat.py:222] Error in preprocessing prompt inputs`,
		`(APIServer pid=1) ERROR 11-04 09:41:00 [serving_chat.py:222] Traceback (most recent call last):`,
		`(APIServer pid=1) ERROR 11-04 09:41:00 [serving_chat.py:222] ValueError: This model's maximum context length is 4096 tokens.`)
	if s.State != StateReady {
		t.Errorf("a request's error read as %s (%+v)", s.State, s.Failure)
	}
	s = read(t, ready, `(APIServer pid=1) ERROR 10-20 03:20:50 [async_llm.py:485] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.`)
	if s.State != StateFailed || s.Failure.When != WhenServing {
		t.Errorf("the engine's death read as %s (%+v)", s.State, s.Failure)
	}
}

// TestSecondBatchClasses: a traceback announced mid-line, graphs turned
// off by enforce-eager, an HPU's driver, torch_npu's notices and a process
// that only printed its rank.
func TestSecondBatchClasses(t *testing.T) {
	if s := read(t, `router init state: Traceback (most recent call last):`); s.State != StateFailed || s.Failure.Kind != FailUnknown {
		t.Errorf("a traceback announced mid-line: %s %+v", s.State, s.Failure)
	}
	if s := read(t, `(EngineCore pid=621) WARNING 05-04 15:43:42 [vllm.py:900] Enforce eager set, disabling torch.compile and CUDAGraphs.`); s.CUDAGraphs == nil || *s.CUDAGraphs {
		t.Errorf("enforce-eager: cuda_graphs %v, want false", s.CUDAGraphs)
	}
	if s := read(t, `HPU driver version: 1.20.1-366eb9c`); str(s.DriverVersion) != "1.20.1-366eb9c" {
		t.Errorf("HPU driver %s", str(s.DriverVersion))
	}
	if s := read(t, `    The backend in torch.distributed.init_process_group set to hccl now..`); str(s.Platform) != "npu" {
		t.Errorf("torch_npu's notice: platform %s", str(s.Platform))
	}
	if s := read(t, `INFO 04-28 18:01:26 [parallel_state.py:1004] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0`).Finish(); len(s.Ranks) != 1 {
		t.Errorf("a rank line alone: ranks %v, want 1", s.Ranks)
	}
}
