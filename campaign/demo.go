package campaign

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
)

// DemoLaunch is the launch command of the demo campaign.
const DemoLaunch = "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --trust-remote-code " +
	"--max-model-len 262144 --gpu-memory-utilization 0.90 --port 8000"

// DemoSGLangLaunch is the demo's launch command with --engine sglang.
const DemoSGLangLaunch = "python3 -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 --trust-remote-code " +
	"--context-length 262144 --mem-fraction-static 0.88 --enable-metrics --host 0.0.0.0 --port 8000"

// Demo returns the campaign of `profdeck demo`: Kimi-K2.5 on TP8 on the
// built-in simulated deployment, with the notebook in dir. Its settings are
// scaled down so every phase finishes in demo time: the sweep measures each
// concurrency level for a few seconds (under a minute for 1…256), and a
// stalled load is called after seconds rather than minutes.
func Demo(dir string) *Campaign {
	c := Defaults()
	c.Name = "profdeck demo (SIMULATED deployment)"
	c.Notebook = filepath.Join(dir, "profdeck-demo.md")
	c.Host = "sim"
	c.Server = Server{
		URL:         "http://127.0.0.1:8000",
		APIKeyEnv:   "OPENAI_API_KEY",
		Launch:      DemoLaunch,
		Log:         "/var/log/vllm/server.log",
		ProfilerDir: DefaultProfilerDir,
	}
	c.Model = Model{Name: "moonshotai/Kimi-K2.5", Preset: "kimi-k2.5", TP: 8, ExpectGiB: 74.9}
	c.Load = Load{StallAfter: Duration{10 * time.Second}, PollInterval: Duration{500 * time.Millisecond}}
	c.Macro = Macro{
		API:         macro.APICompletions,
		Concurrency: slices.Clone(DefaultConcurrency),
		Duration:    Duration{3 * time.Second}, // per level, and at least Requests
		Requests:    12,                        // a level's TPOT is quoted from 10 requests up
		Warmup:      2,
		InputLen:    128,
		OutputLen:   32,
		SLO:         "ttft=2s,tpot=50ms,e2el=30s",
		Repeat:      1,
		// The search and the open loop's schedule keep their defaults.
		SearchTolerance: c.Macro.SearchTolerance,
		Arrivals:        c.Macro.Arrivals,
		Burstiness:      c.Macro.Burstiness,
		LatencyFrom:     c.Macro.LatencyFrom,
		TraceSpeed:      c.Macro.TraceSpeed,
	}
	c.NCCL.NProc = 8
	// The notebook answers how many GPUs 2,000 users need within the SLO.
	c.Capacity = Capacity{Users: 2000, ThinkTime: Duration{30 * time.Second}, Headroom: DefaultHeadroom}
	return c
}

// DemoVariants are the variants of `profdeck demo --variants`: the batch
// cap at 64 and 256, and chunked prefill, each added to the demo's launch.
func DemoVariants() []Variant {
	return []Variant{
		{Matrix: map[string][]string{"--max-num-seqs": {"64", "256"}}},
		{Name: "chunked", Args: []string{"--enable-chunked-prefill"}},
	}
}
