package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

const dumpCapture = `Process 4101: VLLM::Worker_TP3
Python v3.12.3 (/usr/bin/python3.12)

Thread 4101 (active): "MainThread"
    capture_end (torch/cuda/graphs.py:88)
    __exit__ (torch/cuda/graphs.py:186)
    capture_model (vllm/v1/worker/gpu_model_runner.py:2301)
        Arguments:
            self: <GPUModelRunner at 0x7f>
Thread 4188 (idle): "Thread-1 (_report_usage_worker)"
    wait (threading.py:359)
`

const dumpAllReduce = `Process 4102: VLLM::Worker_TP4
Python v3.12.3 (/usr/bin/python3.12)

Thread 4102 (active+gil): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2501)
    all_reduce (vllm/distributed/device_communicators/pynccl.py:140)
    determine_available_memory (vllm/v1/worker/gpu_worker.py:230)
`

func TestParseDumpAndGroup(t *testing.T) {
	a, ok := parseDump(dumpCapture)
	if !ok || a.pid != 4101 || len(a.frames) != 3 || where(a.frames[0]) != "torch/cuda/graphs.py: capture_end" {
		t.Fatalf("dump = %+v", a)
	}
	b, _ := parseDump(strings.ReplaceAll(dumpCapture, "4101", "4105"))
	c, _ := parseDump(dumpAllReduce)
	groups := groupStacks([]dump{a, c, b})
	if len(groups) != 2 || len(groups[0].PIDs) != 2 || groups[0].Where != "torch/cuda/graphs.py: capture_end" {
		t.Fatalf("groups = %+v", groups)
	}
	groups[0].Ranks = []int{3, 5}
	if got := StackText(groups[0]); got != "2 ranks in torch/cuda/graphs.py: capture_end" {
		t.Errorf("StackText = %q", got)
	}
	if _, ok := parseDump("Error: Failed to find python version from target process\n"); ok {
		t.Error("an error message parsed as a dump")
	}
}

func TestParseProcs(t *testing.T) {
	out := "/proc/uptime:351.25 700.10\n" +
		"/proc/42/stat:42 (python3 (vllm)) D 1 42 42 0 -1 4194560 1 0 0 0 150 50 0 0 20 0 12 0 100 0 0\n" +
		"/proc/42/io:rchar: 2048\n/proc/42/io:read_bytes: 1000000\n/proc/43/stat:garbage\n"
	s := parseProcs(out)
	p := s.procs[42]
	if s.uptime != 351.25 || p.name != "python3 (vllm)" || p.state != "D" || p.ticks != 200 || p.readBytes != 1000000 || p.rchar != 2048 || !p.ioKnown {
		t.Fatalf("parsed %+v %+v", s, p)
	}
}

// The verdict rules, one case each.
func TestVerdicts(t *testing.T) {
	busy := []phases.GPUEvidence{{Index: 0, UtilPct: 100}, {Index: 1, UtilPct: 100}}
	idle := []phases.GPUEvidence{{Index: 0, UtilPct: 0}, {Index: 1, UtilPct: 0}}
	proc := func(state string, cpu, read float64) phases.ProcEvidence {
		return phases.ProcEvidence{PID: 7, Name: "python3", State: state, CPUPct: cpu, ReadBps: read, IOKnown: true, ReadTotal: 75e9}
	}
	cases := []struct {
		name string
		d    phases.Diagnosis
		want string
	}{
		{"gone", phases.Diagnosis{Procs: []phases.ProcEvidence{{PID: 7, State: "gone"}}}, "server process gone"},
		{"none", phases.Diagnosis{}, "server process gone (no process found"},
		{"behind", phases.Diagnosis{Procs: []phases.ProcEvidence{proc("S", 1, 0)}, GPUs: idle,
			Ranks: markBehind([]phases.RankEvidence{{Rank: 0, Stage: "cuda_graphs"}, {Rank: 3, Stage: "kv_cache", LastLine: "x"}, {Rank: 1, Stage: "cuda_graphs"}})},
			"rank 3 behind (the others reached CUDA graphs)"},
		{"collective", phases.Diagnosis{Procs: []phases.ProcEvidence{proc("R", 100, 0)}, GPUs: busy,
			Stacks: []phases.StackGroup{{PIDs: []int{7}, Where: "x", Frames: []string{"all_reduce (torch/distributed/distributed_c10d.py:2501)"}}}},
			"spinning in a collective (GPU 100%, no progress for 5 min)"},
		{"D state", phases.Diagnosis{Procs: []phases.ProcEvidence{proc("D", 0, 0)}, GPUs: idle}, "blocked in the kernel on I/O (pid 7 in state D, 0 B/s read for 5 min, GPUs idle)"},
		{"reading", phases.Diagnosis{Procs: []phases.ProcEvidence{proc("S", 5, 40e6)}, GPUs: idle}, "still reading weights at 38.15 MiB/s"},
		{"cpu", phases.Diagnosis{Procs: []phases.ProcEvidence{proc("R", 99, 0)}, GPUs: idle}, "busy on the CPU (pid 7 python3 at 99% CPU"},
		{"io stopped", phases.Diagnosis{Procs: []phases.ProcEvidence{proc("S", 0.5, 0)}, GPUs: idle}, "weights I/O stopped (0 B/s for 5 min, GPUs idle)"},
	}
	for _, c := range cases {
		d := c.d
		d.SampleS = 2
		v, why := verdict(&d, Config{Stalled: 5 * time.Minute})
		if !strings.HasPrefix(v, c.want) {
			t.Errorf("%s: verdict %q, want %q (why %q)", c.name, v, c.want, why)
		}
		if c.name == "collective" && (len(why) == 0 || !strings.Contains(why[0], "all_reduce")) {
			t.Errorf("collective: why %q lacks the frame", why)
		}
	}
}

// Parsers of host output never panic and stay bounded.
func FuzzParseDump(f *testing.F) {
	f.Add(dumpCapture)
	f.Add(dumpAllReduce)
	f.Add("Thread (\"\nProcess :\n    (")
	f.Fuzz(func(t *testing.T, s string) {
		d, _ := parseDump(s)
		groupStacks([]dump{d, d})
		for _, fr := range d.frames {
			_ = where(fr)
		}
	})
}

func FuzzParseProcs(f *testing.F) {
	f.Add("/proc/uptime:351.25 700.10\n/proc/42/stat:42 (a) R 1 2 3 4 5 6 7 8 9 10 11 12 13\n/proc/42/io:rchar: 1\n")
	f.Add("/proc/x/stat:(((\n/proc/1/io::\n")
	f.Fuzz(func(t *testing.T, s string) {
		parseProcs(s)
		parseStat(s)
	})
}

// Past the weights, idle processes are not a weights I/O stop.
func TestVerdictIdlePastWeights(t *testing.T) {
	d := phases.Diagnosis{SampleS: 2, GPUs: []phases.GPUEvidence{{UtilPct: 0}},
		Procs: []phases.ProcEvidence{{PID: 7, State: "S", IOKnown: true}}}
	v, _ := verdict(&d, Config{Stage: "compile", Stalled: 10 * time.Minute})
	if v != "idle during torch.compile (0 B/s read, no CPU, GPUs idle for 10 min): waiting on something that never came" {
		t.Errorf("verdict %q", v)
	}
}

// A server that is up is not diagnosed as stuck, however busy its GPUs.
func TestVerdictServing(t *testing.T) {
	d := phases.Diagnosis{SampleS: 2, GPUs: []phases.GPUEvidence{{UtilPct: 100}},
		Procs: []phases.ProcEvidence{{PID: 7, State: "R", CPUPct: 90, IOKnown: true}}}
	v, _ := verdict(&d, Config{Stage: "ready"})
	if v != "the server is up and loaded: nothing stalled (1 process alive, GPUs up to 100%)" {
		t.Errorf("verdict %q", v)
	}
}
