package vllmlog

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// The failure model reads structure: a traceback at ERROR level or on a
// process's own stream ends it; its frames give the stage and its
// exception the kind; a warning's traceback is no failure.
func TestTracebackFailures(t *testing.T) {
	cases := []struct {
		name, log          string
		state, kind, stage string
	}{
		{"worker traceback cut before its exception, frames in load_model",
			"(Worker_TP1 pid=7) ERROR 08-14 02:42:27 [multiproc_executor.py:923] Traceback (most recent call last):\n" +
				"(Worker_TP1 pid=7) ERROR 08-14 02:42:27 [multiproc_executor.py:923]   File \"/v/gpu_worker.py\", line 1, in load_model\n",
			StateFailed, FailWorkerDied, phases.StageWeights},
		{"engine traceback ending in an OOM while capturing",
			"INFO 01-01 00:00:01 [gpu_model_runner.py:1] Model loading took 10.0 GiB and 5.0 seconds\n" +
				"(EngineCore_DP0 pid=9) Traceback (most recent call last):\n" +
				"(EngineCore_DP0 pid=9)   File \"/v/gpu_worker.py\", line 3, in compile_or_warm_up_model\n" +
				"(EngineCore_DP0 pid=9)   File \"/v/gpu_model_runner.py\", line 4, in capture_model\n" +
				"(EngineCore_DP0 pid=9) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB.\n",
			StateFailed, FailOOM, phases.StageCUDAGraphs},
		{"an unprefixed traceback counts once its exception shows",
			"Traceback (most recent call last):\n  File \"/v/api_server.py\", line 9, in run_server\n    sock.bind(addr)\nOSError: [Errno 98] Address already in use\n",
			StateFailed, FailPortInUse, phases.StageStarting},
		{"a failure after the weights are loaded is in the KV-cache profiling",
			"INFO 01-01 00:00:01 [gpu_model_runner.py:1] Model loading took 10.0 GiB and 5.0 seconds\n" +
				"(EngineCore_0 pid=3) ERROR 01-01 00:00:02 [core.py:1] EngineCore failed to start.\n",
			StateFailed, FailEngineFailed, phases.StageKVCache},
		{"an import error names its kind",
			"(APIServer pid=1) Traceback (most recent call last):\n(APIServer pid=1) ModuleNotFoundError: No module named 'vllm._C'\n",
			StateFailed, FailImport, phases.StageStarting},
		{"a warning's traceback is no failure",
			"WARNING 01-01 00:00:01 [utils.py:1] Traceback (most recent call last):\n" +
				"WARNING 01-01 00:00:01 [utils.py:1]   File \"/v/x.py\", line 1, in load_model\n" +
				"INFO 01-01 00:00:02 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000\n",
			StateReady, "", ""},
		{"a dead engine after serving is a failure, not ready",
			"INFO 01-01 00:00:02 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000\n" +
				"ERROR 01-01 00:09:00 [core_client.py:1] Engine core proc EngineCore_DP1 died unexpectedly, shutting down client.\n",
			StateFailed, FailEngineFailed, phases.StageReady},
	}
	for _, c := range cases {
		s, err := Read(strings.NewReader(c.log))
		if err != nil {
			t.Fatal(err)
		}
		if s.State != c.state {
			t.Errorf("%s: state %s, want %s", c.name, s.State, c.state)
		}
		if c.kind == "" {
			if s.Failure != nil {
				t.Errorf("%s: failure %+v, want none", c.name, *s.Failure)
			}
			continue
		}
		if s.Failure == nil || s.Failure.Kind != c.kind || s.Failure.Stage != c.stage {
			t.Errorf("%s: failure %+v, want %s at %s", c.name, s.Failure, c.kind, c.stage)
		}
	}
}

// Hosts, the ready time and stalls are read off the log.
func TestHostsReadyStalls(t *testing.T) {
	log := "(RayWorkerWrapper pid=5, ip=10.0.0.2) INFO 08-07 10:36:23 model_runner.py:692] Loading model weights took 24.4 GB\n" +
		"(EngineCore_0 pid=3) (RayWorkerWrapper pid=6, ip=10.0.0.1) INFO 08-07 10:36:24 model_runner.py:692] Loading model weights took 24.4 GB\n" +
		"(EngineCore_0 pid=3) INFO 08-07 10:40:02 [shm_broadcast.py:466] No available shared memory broadcast block found in 60 seconds.\n" +
		"INFO 08-07 10:41:00 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000\n"
	s, _ := Read(strings.NewReader(log))
	if strings.Join(s.Hosts, ",") != "10.0.0.1,10.0.0.2" {
		t.Errorf("hosts %v", s.Hosts)
	}
	if s.ReadyAt == nil || *s.ReadyAt != "10:41:00" {
		t.Errorf("ready_at %v", s.ReadyAt)
	}
	if len(s.Stalls) != 1 || s.Stalls[0].Kind != "shm_broadcast" || s.Stalls[0].Time != "10:40:02" {
		t.Errorf("stalls %+v", s.Stalls)
	}
}

// A speculative drafter loading after the model's weights is still loading.
func TestDrafterIsStillLoading(t *testing.T) {
	log := "(Worker_TP0 pid=661) INFO 06-20 19:18:32 [default_loader.py:430] Loading weights took 14.18 seconds\n" +
		"(Worker_TP0 pid=661) INFO 06-20 19:18:32 [gpu_model_runner.py:5173] Loading drafter model...\n"
	if s, _ := Read(strings.NewReader(log)); s.State != StateLoading || s.Stage != phases.StageWeights {
		t.Errorf("state %s/%s, want loading/weights", s.State, s.Stage)
	}
}
