package vllmlog

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	versionRe = regexp.MustCompile(`Initializing an? (?:V[01] )?LLM engine \(v?([^)\s]+)\)|vLLM API server version (v?[\w.+-]+)|^vLLM (?:server )?version:? (v?\d[\w.+-]*)`)

	// Any tqdm bar: "desc: NN% Completed | n/N [..]", "desc:  NN%|blocks| n/N [..]", "desc:  NN% n/N [..]".
	barRe = regexp.MustCompile(`^(.*?):\s*(\d{1,3})%(?:\s*Completed\s*\||\|[^|]*\|)?\s*(\d+)/(\d+)\s*\[([\d:?]+)<([\d:?]+)(?:,\s*([\d.?]+)\s*(it/s|s/it))?`)

	rankLineRe  = regexp.MustCompile(`rank (\d+) in world size (\d+) is assigned as|world_size=(\d+) rank=(\d+) local_rank=(\d+)`)
	loadStartRe = regexp.MustCompile(`Starting to load model (.+?)\.\.\.`)
	weightsRe   = regexp.MustCompile(`Loading weights took ([\d.]+) seconds`)
	modelRe     = regexp.MustCompile(`Model loading took ([\d.]+) (GiB|GB)(?: memory)? and ([\d.]+) seconds`)
	modelV0Re   = regexp.MustCompile(`Loading model weights took ([\d.]+) (GiB|GB)`)
	hpuRe       = regexp.MustCompile(`Pre-loading model weights on \S+ took ([\d.]+) (GiB|GB)`)
	compileRe   = regexp.MustCompile(`for vLLM's torch\.compile|Dynamo bytecode transform time|Compiling a graph for|Directly load the compiled graph|Cache the graph .* for later use|saved AOT compiled function|Warming up model for the compilation`)
	compileDone = regexp.MustCompile(`torch\.compile (?:takes|took) ([\d.]+) s in total`)
	kvMemRe     = regexp.MustCompile(`Available KV cache memory: (-?[\d.]+) GiB|kv_cache_size=(-?[\d.]+)GiB|reserved for KV Cache is (-?[\d.]+)GiB`)
	kvTokRe     = regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`)
	kvBlocksRe  = regexp.MustCompile(`# GPU blocks: (\d+)`)
	concRe      = regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.,]+)x`)
	graphsRe    = regexp.MustCompile(`Capturing the model for CUDA graphs|Capturing cudagraphs for decoding|Profiling CUDA graph memory|Capturing model for speculator`)
	graphsDone  = regexp.MustCompile(`Graph capturing finished in (\d+) secs(?:, took ([\d.]+) GiB)?`)
	engineInit  = regexp.MustCompile(`init engine \(profile, create kv cache, warmup model\) took ([\d.]+) (?:seconds|s)`)
	readyRe     = regexp.MustCompile(`Starting vLLM API server|Starting vLLM server on|Uvicorn running on|Application startup complete|Available routes are`)
	watchdogRe  = regexp.MustCompile(`No available shared memory broadcast block found in (\d+) seconds`)
	profilerRe  = regexp.MustCompile(`Torch Profiler is enabled|Profiler with mode '\w+' is enabled|[Pp]rofiling enabled\. Traces will be saved to|Profiler (?:started|stopped)|Starting profiler|Stopping profiler`)

	oomRe     = regexp.MustCompile(`CUDA out of memory|OutOfMemoryError|No available memory for the cache blocks|CUDA error: out of memory`)
	ncclRe    = regexp.MustCompile(`NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclRemoteError|ncclInvalidUsage`)
	timeoutRe = regexp.MustCompile(`TimeoutError|[Tt]imed out waiting for|Timeout while waiting for|startup timed out|did not become ready within`)
	launchRe  = regexp.MustCompile(`in launch_core_engines|with launch_core_engines\(`)
	diedRe    = regexp.MustCompile(`Worker proc \S+ died unexpectedly|WorkerProc failed to start|WorkerProc hit an exception|Exception in worker \S+ while processing|Worker process .* died|RayWorkerWrapper died`)
	engineRe  = regexp.MustCompile(`EngineCore failed to start|Engine core initialization failed|Engine process failed to start|Failed core proc\(s\)`)
)

// classify fills r's kind and values from its message.
func classify(r *Record) {
	msg := r.Msg
	if m := barRe.FindStringSubmatch(msg); m != nil {
		b := parseBar(m)
		if strings.Contains(b.Desc, "CUDA graph") || strings.Contains(b.Desc, "cudagraph") {
			r.Kind, r.Bar = KindGraphs, b
			return
		}
		if isLoadBar(b.Desc) {
			r.Kind, r.Bar = KindShardBar, b
			return
		}
	}
	if f, strong := failureOf(msg); f != "" {
		r.Kind, r.Failure, r.Strong = KindFailure, f, strong
		return
	}
	switch {
	case versionRe.MatchString(msg):
		m := versionRe.FindStringSubmatch(msg)
		v := m[1] + m[2] + m[3]
		r.Kind, r.Version = KindVersion, strings.TrimPrefix(v, "v")
	case rankLineRe.MatchString(msg):
		m := rankLineRe.FindStringSubmatch(msg)
		r.Kind = KindRankInfo
		if m[1] != "" {
			r.Value, _ = strconv.ParseFloat(m[1], 64)
		} else {
			r.Value, _ = strconv.ParseFloat(m[4], 64)
		}
	case loadStartRe.MatchString(msg):
		r.Kind = KindLoadStart
	case modelRe.MatchString(msg):
		m := modelRe.FindStringSubmatch(msg)
		r.Kind = KindModelLoaded
		r.GiB = atof(m[1])
		r.Seconds = atof(m[3])
	case modelV0Re.MatchString(msg):
		m := modelV0Re.FindStringSubmatch(msg)
		r.Kind, r.GiB = KindModelLoaded, atof(m[1])
	case hpuRe.MatchString(msg):
		m := hpuRe.FindStringSubmatch(msg)
		r.Kind, r.GiB = KindModelLoaded, atof(m[1])
	case weightsRe.MatchString(msg):
		r.Kind, r.Seconds = KindWeightsRead, atof(weightsRe.FindStringSubmatch(msg)[1])
	case compileDone.MatchString(msg):
		r.Kind, r.Seconds = KindCompileDone, atof(compileDone.FindStringSubmatch(msg)[1])
	case compileRe.MatchString(msg):
		r.Kind = KindCompile
	case kvTokRe.MatchString(msg):
		r.Kind, r.Tokens = KindKVCache, atoi64(kvTokRe.FindStringSubmatch(msg)[1])
	case kvBlocksRe.MatchString(msg):
		r.Kind, r.Blocks = KindKVBlocks, atoi64(kvBlocksRe.FindStringSubmatch(msg)[1])
	case concRe.MatchString(msg):
		m := concRe.FindStringSubmatch(msg)
		r.Kind, r.Tokens, r.Value = KindConcurrency, atoi64(m[1]), atof(m[2])
	case kvMemRe.MatchString(msg):
		m := kvMemRe.FindStringSubmatch(msg)
		r.Kind, r.GiB = KindKVMemory, atof(m[1]+m[2]+m[3])
	case graphsDone.MatchString(msg):
		m := graphsDone.FindStringSubmatch(msg)
		r.Kind, r.Seconds = KindGraphsDone, atof(m[1])
		if m[2] != "" {
			r.GiB = atof(m[2])
		}
	case graphsRe.MatchString(msg):
		r.Kind = KindGraphs
	case engineInit.MatchString(msg):
		r.Kind, r.Seconds = KindEngineInit, atof(engineInit.FindStringSubmatch(msg)[1])
	case readyRe.MatchString(msg):
		r.Kind = KindReady
	case watchdogRe.MatchString(msg):
		r.Kind = KindWatchdog
	case profilerRe.MatchString(msg):
		r.Kind = KindProfiler
	case r.Level == "WARNING" || r.Level == "ERROR" || r.Level == "CRITICAL":
		r.Kind = KindWarning
	}
}

// failureOf names the failure a message shows, and whether it is a root
// cause (strong) or a consequence (a worker died, the engine failed).
func failureOf(msg string) (string, bool) {
	switch {
	case oomRe.MatchString(msg):
		return FailOOM, true
	case ncclRe.MatchString(msg):
		return FailNCCL, true
	case timeoutRe.MatchString(msg):
		return FailTimeout, true
	case diedRe.MatchString(msg):
		return FailWorkerDied, false
	case engineRe.MatchString(msg):
		return FailEngineFailed, false
	case launchRe.MatchString(msg):
		// The launcher's traceback with no exception of its own: the
		// engines did not come up in time.
		return FailTimeout, false
	}
	return "", false
}

var loadBarDescs = []string{"Loading safetensors checkpoint shards", "Loading safetensors using Runai Model Streamer",
	"Multi-thread loading shards", "Loading weights (pinned)", "Loading safetensors (Buffered)",
	"Loading pt checkpoint shards", "Loading checkpoint shards", "Loading gguf", "Loading weights"}

func isLoadBar(desc string) bool {
	for _, d := range loadBarDescs {
		if strings.HasPrefix(desc, d) {
			return true
		}
	}
	return false
}

func parseBar(m []string) *Bar {
	b := &Bar{Desc: strings.TrimSpace(m[1])}
	b.Pct, _ = strconv.Atoi(m[2])
	b.Done, _ = strconv.Atoi(m[3])
	b.Total, _ = strconv.Atoi(m[4])
	b.ElapsedS = clock(m[5])
	b.RemainingS = clock(m[6])
	if m[7] != "" && m[7] != "?" {
		v := atof(m[7])
		if m[8] == "s/it" {
			b.SecPerIt = v
		} else if v > 0 {
			b.SecPerIt = 1 / v
		}
	}
	return b
}

// clock parses tqdm's [[h:]mm:]ss, -1 for "?".
func clock(s string) float64 {
	if strings.Contains(s, "?") || s == "" {
		return -1
	}
	total := 0.0
	for _, p := range strings.Split(s, ":") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return -1
		}
		total = total*60 + float64(n)
	}
	return total
}

func atof(s string) float64 {
	v, _ := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	return v
}

func atoi64(s string) int64 {
	v, _ := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	return v
}
