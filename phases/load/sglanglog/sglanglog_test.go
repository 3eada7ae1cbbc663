package sglanglog_test

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/enginelog"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
)

// startup is an SGLang 0.4-style start of a TP2 server, with a vLLM
// platform line before SGLang's first (SGLang imports vLLM).
const startup = `INFO 04-03 04:46:18 __init__.py:190] Automatically detected platform cuda.
[2025-04-03 04:46:21] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tp_size=2)
[2025-04-03 04:46:30 TP0] Init torch distributed begin.
[2025-04-03 04:46:30 TP1] Init torch distributed begin.
[2025-04-03 04:46:31 TP0] Load weight begin. avail mem=78.50 GB
[2025-04-03 04:46:31 TP1] Load weight begin. avail mem=78.50 GB
Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.50it/s]
Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.60it/s]
[2025-04-03 04:46:34 TP1] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=70.90 GB, mem usage=7.60 GB.
[2025-04-03 04:46:34 TP0] Load weight end. elapsed=3.12 s, type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=70.90 GB, mem usage=7.61 GB.
[2025-04-03 04:46:35 TP0] KV Cache is allocated. #tokens: 1000000, K size: 30.52 GB, V size: 30.52 GB
[2025-04-03 04:46:35 TP1] KV Cache is allocated. #tokens: 1000000, K size: 30.52 GB, V size: 30.52 GB
[2025-04-03 04:46:35 TP0] Memory pool end. avail mem=8.10 GB
[2025-04-03 04:46:35 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=8.00 GB
Capturing batches (bs=1 avail_mem=7.20 GB): 100%|██████████| 23/23 [00:09<00:00,  2.41it/s]
[2025-04-03 04:46:45 TP0] Capture cuda graph end. Time elapsed: 9.61 s. mem usage=0.80 GB. avail mem=7.20 GB.
[2025-04-03 04:46:46 TP0] max_total_num_tokens=1000000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072
[2025-04-03 04:46:47] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)
[2025-04-03 04:46:48] The server is fired up and ready to roll!
`

func read(t *testing.T, text string) *vllmlog.Summary {
	t.Helper()
	s, err := enginelog.Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStartup(t *testing.T) {
	s := read(t, startup)
	if s.Engine != "sglang" || s.State != vllmlog.StateReady || s.Stage != phases.StageReady {
		t.Fatalf("engine %q state %q stage %q; want sglang ready ready", s.Engine, s.State, s.Stage)
	}
	if s.WeightsGiB == nil || *s.WeightsGiB != 7.61 || s.LoadSeconds == nil || *s.LoadSeconds != 3.12 {
		t.Errorf("weights %v in %v s; want 7.61 GiB (the larger rank) in 3.12 s", s.WeightsGiB, s.LoadSeconds)
	}
	if s.KVCacheTokens == nil || *s.KVCacheTokens != 1000000 || s.KVCacheGiB == nil || *s.KVCacheGiB != 61.04 {
		t.Errorf("KV %v tokens %v GiB; want 1000000 and 61.04 (K+V)", s.KVCacheTokens, s.KVCacheGiB)
	}
	if len(s.Ranks) != 2 || s.Ranks[0].Name != "TP0" || s.Ranks[1].Rank != 1 || s.Ranks[1].PID != nil {
		t.Errorf("ranks %+v; want TP0 and TP1, no pid", s.Ranks)
	}
	if s.ReadyAt == nil || *s.ReadyAt != "04:46:47" {
		t.Errorf("ready at %v; want 04:46:47 (Uvicorn serving)", s.ReadyAt)
	}
	if s.Shards == nil || s.Shards.Done != 4 || s.Shards.Total != 4 {
		t.Errorf("shards %+v; want 4/4", s.Shards)
	}
}

// Each stage of the load is reported as the lines arrive.
func TestStagesAsTheyCome(t *testing.T) {
	lines := strings.SplitAfter(startup, "\n")
	want := map[int]string{5: "weights", 11: "kv_cache", 14: "cuda_graphs", 19: "ready"}
	p := enginelog.New(enginelog.Auto)
	s := vllmlog.NewSummary()
	for i, l := range lines {
		for _, r := range p.Write([]byte(l)) {
			s.Add(r)
		}
		if st, ok := want[i+1]; ok && s.Stage != st {
			t.Errorf("after line %d: stage %q; want %q", i+1, s.Stage, st)
		}
	}
	if p.Engine() != "sglang" {
		t.Errorf("parser engine %q", p.Engine())
	}
}

func TestFailures(t *testing.T) {
	cases := []struct{ name, log, kind, stage string }{
		{"oom in graph capture", `[2025-04-03 04:46:35 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=8.00 GB
[2025-04-03 04:46:36 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 216, in initialize
    self.init_cuda_graphs()
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 269, in __init__
    raise Exception(
Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB.

[2025-04-03 04:46:36] Received sigquit from a child process. It usually means the child failed.
`, vllmlog.FailOOM, phases.StageCUDAGraphs},
		{"kv pool too small", `[2025-04-03 04:46:34 TP0] Load weight end. type=X, dtype=torch.bfloat16, avail mem=1.90 GB, mem usage=76.60 GB.
[2025-04-03 04:46:35 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/model_runner.py", line 900, in init_memory_pool
    raise RuntimeError(
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.
`, vllmlog.FailEngineFailed, phases.StageKVCache},
		{"sigquit alone", `[2025-04-03 04:46:31 TP0] Load weight begin. avail mem=78.50 GB
[2025-04-03 04:46:40] Received sigquit from a child process. It usually means the child failed.
`, vllmlog.FailEngineFailed, phases.StageWeights},
	}
	for _, c := range cases {
		s := read(t, c.log)
		if s.State != vllmlog.StateFailed || s.Failure == nil || s.Failure.Kind != c.kind || s.Failure.Stage != c.stage {
			t.Errorf("%s: state %q failure %+v; want failed %s at %s", c.name, s.State, s.Failure, c.kind, c.stage)
		}
	}
}

// A vLLM log stays vLLM's: an SGLang word in a request does not switch.
func TestVLLMStaysVLLM(t *testing.T) {
	s := read(t, `INFO 03-27 10:29:03 [api_server.py:1] vLLM API server version 0.8.2
INFO 03-27 10:29:05 [launcher.py:1] Uvicorn running on http://0.0.0.0:8000
`)
	if s.Engine != "vllm" || s.State != vllmlog.StateReady {
		t.Fatalf("engine %q state %q", s.Engine, s.State)
	}
}

func TestMessage(t *testing.T) {
	for line, want := range map[string]string{
		"[2025-04-03 04:46:36 TP3] Scheduler hit an exception: Traceback (most recent call last):": "Scheduler hit an exception: Traceback (most recent call last):",
		"[2025-04-03 04:46:48] The server is fired up and ready to roll!":                          "The server is fired up and ready to roll!",
		"(EngineCore_DP0 pid=208) ERROR 03-27 10:29:13 [core.py:1] EngineCore failed to start.":    "EngineCore failed to start.",
		"torch.OutOfMemoryError: CUDA out of memory.":                                              "torch.OutOfMemoryError: CUDA out of memory.",
	} {
		if got := enginelog.Message(line); got != want {
			t.Errorf("Message(%q) = %q; want %q", line, got, want)
		}
	}
}

// TestDeploymentAndServingFailure: SGLang's server args give its parallel
// sizes, DP attention, graphs and PD role; a scheduler raising in its event
// loop under a Ray actor's prefix fails while serving; the 2026 KV pool
// line (dtype first) is read.
func TestDeploymentAndServingFailure(t *testing.T) {
	log := `[2026-05-15 11:58:00] server_args=ServerArgs(model_path='m', quantization='fp8', device='cuda', tp_size=16, pp_size=1, dp_size=16, ep_size=16, enable_dp_attention=True, disable_cuda_graph=True, disaggregation_mode='decode')
[2026-06-08 07:20:53 DP0 TP0 EP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1106304, K size: 25.32 GB, V size: 25.32 GB
(SGLangEngine pid=6680) [2025-09-22 14:35:35 DP1 TP3 EP3] Scheduler hit an exception: Traceback (most recent call last):
(SGLangEngine pid=6680)   File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 860, in event_loop_overlap
`
	s, err := enginelog.Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if s.TP == nil || *s.TP != 16 || s.DP == nil || *s.DP != 16 || s.EP == nil || *s.EP != 16 || s.PP == nil || *s.PP != 1 {
		t.Errorf("sizes tp=%v pp=%v dp=%v ep=%v, want 16/1/16/16", s.TP, s.PP, s.DP, s.EP)
	}
	if s.DPAttention == nil || !*s.DPAttention || s.CUDAGraphs == nil || *s.CUDAGraphs || s.PDRole == nil || *s.PDRole != "decode" {
		t.Errorf("dp_attention=%v cuda_graphs=%v pd_role=%v, want true/false/decode", s.DPAttention, s.CUDAGraphs, s.PDRole)
	}
	if s.Quantization == nil || *s.Quantization != "fp8" || s.Platform == nil || *s.Platform != "cuda" {
		t.Errorf("quantization=%v platform=%v, want fp8/cuda", s.Quantization, s.Platform)
	}
	if s.KVCacheTokens == nil || *s.KVCacheTokens != 1106304 {
		t.Errorf("kv tokens %v, want 1106304", s.KVCacheTokens)
	}
	if s.Failure == nil || s.Failure.When != vllmlog.WhenServing || s.Failure.Component != "scheduler" {
		t.Errorf("failure %+v, want a scheduler failure while serving", s.Failure)
	}
}
