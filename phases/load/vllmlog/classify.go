package vllmlog

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases/load/internal/logfield"
)

var (
	versionRe = regexp.MustCompile(`Initializing an? (?:V[01] )?LLM engine \(v?([^)\s]+)\)|vLLM API server version (v?[\w.+-]+)|^vLLM (?:server )?version:? (v?\d[\w.+-]*)`)

	// Any tqdm bar: "desc: NN% Completed | n/N [..]", "desc:  NN%|blocks| n/N [..]", "desc:  NN% n/N [..]".
	barRe = regexp.MustCompile(`^(.*?):\s*(\d{1,3})%(?:\s*Completed\s*\||\|[^|]*\|)?\s*(\d+)/(\d+)\s*\[([\d:?]+)<([\d:?]+)(?:,\s*([\d.?]+)\s*(it/s|s/it))?`)

	rankLineRe  = regexp.MustCompile(`rank (\d+) in world size (\d+) is assigned as|world_size=(\d+) rank=(\d+) local_rank=(\d+)`)
	loadStartRe = regexp.MustCompile(`Starting to load model (.+?)\.\.\.|Loading model from scratch|Loading drafter model|Loading weights with BitsAndBytes quantization|Loading model with MODEL_IMPL_TYPE|Downloading weights from HF|Loading weights from /`)
	// The memory profile's line also states the weights' size (V0 0.6–0.9).
	profWeightsRe = regexp.MustCompile(`model weights take (-?[\d.]+) ?GiB`)
	weightsRe     = regexp.MustCompile(`Loading weights took ([\d.]+) seconds`)
	modelRe       = regexp.MustCompile(`Model loading took ([\d.]+) (GiB|GB)(?: memory)? and ([\d.]+) seconds`)
	modelV0Re     = regexp.MustCompile(`Loading model weights took ([\d.]+) (GiB|GB)`)
	hpuRe         = regexp.MustCompile(`Pre-loading model weights on \S+ took ([\d.]+) (GiB|GB)`)
	compileRe     = regexp.MustCompile(`for vLLM's torch\.compile|Dynamo bytecode transform time|Compiling a graph for|Directly load the compiled graph|Cache the graph .* for later use|saved AOT compiled function|Warming up model for the compilation`)
	compileDone   = regexp.MustCompile(`torch\.compile (?:takes|took) ([\d.]+) s in total|Compilation finished in (?:in )?([\d.]+) \[secs\]`)
	// The profiling run that sizes the KV cache.
	profileRunRe = regexp.MustCompile(`Initial profiling/warmup run took|Memory profiling takes`)
	kvMemRe      = regexp.MustCompile(`Available KV cache memory: (-?[\d.]+) GiB|kv_cache_size=(-?[\d.]+)GiB|reserved for KV Cache is (-?[\d.]+)GiB`)
	kvTokRe      = regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`)
	kvBlocksRe   = regexp.MustCompile(`# GPU blocks: (\d+)`)
	concRe       = regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.,]+)x`)
	graphsRe     = regexp.MustCompile(`Capturing the model for CUDA graphs|Capturing cudagraphs for decoding|Profiling CUDA graph memory|Capturing model for speculator|Registering \d+ cuda graph addresses`)
	graphsDone   = regexp.MustCompile(`Graph capturing finished in (\d+) secs(?:, took ([\d.]+) GiB)?`)
	engineInit   = regexp.MustCompile(`init engine \(profile, create kv cache, warmup model\) took ([\d.]+) (?:seconds|s)`)
	readyRe      = regexp.MustCompile(`Starting vLLM API server|Starting vLLM server on|Uvicorn running on|Application startup complete|Available routes are`)
	watchdogRe   = regexp.MustCompile(`No available shared memory broadcast block found in (\d+) seconds`)
	// Waits a stuck load prints: torch's NCCL watchdog warnings that a
	// collective has not completed, V0's client waiting on its engine.
	waitRe     = regexp.MustCompile(`ProcessGroupNCCL.*(?:[Ww]aiting for|has not (?:yet )?(?:completed|finished)|[Hh]eartbeat monitor)|Waiting for output from MQLLMEngine`)
	profilerRe = regexp.MustCompile(`Torch Profiler is enabled|Profiler with mode '\w+' is enabled|[Pp]rofiling enabled\. Traces will be saved to|Profiler (?:started|stopped)|Starting profiler|Stopping profiler`)

	oomRe  = regexp.MustCompile(`CUDA out of memory|OutOfMemoryError|No available memory for the cache blocks|CUDA error: out of memory`)
	ncclRe = regexp.MustCompile(`NCCL error|[Ww]atchdog caught collective operation timeout|Timeout at NCCL work|NCCL communicator was aborted|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclRemoteError|ncclInvalidUsage`)
	// Whole words only: a function named …WithTimeout is not a timeout.
	timeoutRe = regexp.MustCompile(`(?:^|[^\w])(?:TimeoutError|[Tt]imed out waiting for|Timeout while waiting for|startup timed out|did not become ready within)`)
	// An accelerator fault: Ascend's ACL/PTA errors, CUDA and HIP runtime faults.
	deviceRe     = regexp.MustCompile(`NPU function error|PTA call acl api failed|ACL stream synchronize failed|\bE[A-Z]9999: Inner Error|CUDA error(?: \([^)]*\))?: (?:an illegal|unspecified launch failure|misaligned address|device-side assert|invalid argument|invalid device|no kernel image|the provided PTX)|HIP error(?: \([^)]*\))?: (?:an illegal|unspecified launch failure|invalid argument|invalid device)|rtGetDeviceCount execution failed|[Gg]et device count failed|drv devId is invalid|rtSetDevice\w* execution failed|No CUDA GPUs are available|CUDA driver initialization failed|RuntimeError: No HIP GPUs`)
	portRe       = regexp.MustCompile(`[Aa]ddress already in use|EADDRINUSE`)
	loaderFailRe = regexp.MustCompile(`Producer batch \d+ failed|Consumer error: `)
	launchRe     = regexp.MustCompile(`in launch_core_engines|with launch_core_engines\(`)
	diedRe       = regexp.MustCompile(`Worker proc \S+ died unexpectedly|WorkerProc failed to start|WorkerProc hit an exception|WorkerProc initialization failed|\bpid \d+ died, exit code|died with exit code|killed by signal|Exception in worker \S+ while processing|Worker process .* died|RayWorkerWrapper died`)
	engineRe     = regexp.MustCompile(`EngineCore failed to start|EngineCore encountered a fatal error|Engine core proc \S+ died|EngineDeadError|[Ee]ngine loop has died|MQLLMEngine (?:is )?dead|Engine core initialization failed|Engine process failed to start|Failed core proc\(s\)`)
)

// classify fills r's kind and values from its message.
func classify(r *Record) {
	msg := r.Msg
	if !strings.Contains(msg, "%") || !strings.Contains(msg, "/") {
		// not a bar
	} else if m := barRe.FindStringSubmatch(barFrom(msg)); m != nil {
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
	for _, rule := range rules {
		if !containsAny(msg, rule.needles) {
			continue
		}
		if m := rule.re.FindStringSubmatch(msg); m != nil {
			rule.set(r, m)
			return
		}
	}
	if r.Level == "WARNING" || r.Level == "ERROR" || r.Level == "CRITICAL" {
		r.Kind = KindWarning
	}
}

// rule is one message shape: the regular expression runs only when the
// message contains one of the needles (a cheap literal test first).
type rule struct {
	needles []string
	re      *regexp.Regexp
	set     func(r *Record, m []string)
}

var rules = []rule{
	{[]string{"LLM engine (", "version"}, versionRe, func(r *Record, m []string) {
		r.Kind, r.Version = KindVersion, strings.TrimPrefix(m[1]+m[2]+m[3], "v")
	}},
	{[]string{"world size", "world_size="}, rankLineRe, func(r *Record, m []string) {
		r.Kind = KindRankInfo
		if m[1] != "" {
			r.Value = logfield.Float(m[1])
		} else {
			r.Value = logfield.Float(m[4])
		}
	}},
	{[]string{"Starting to load model", "Loading model from scratch", "Loading drafter model", "Loading weights with BitsAndBytes",
		"MODEL_IMPL_TYPE", "Downloading weights from", "Loading weights from /"}, loadStartRe, func(r *Record, m []string) { r.Kind = KindLoadStart }},
	{[]string{"Model loading took"}, modelRe, func(r *Record, m []string) {
		r.Kind, r.GiB, r.Seconds = KindModelLoaded, logfield.Float(m[1]), logfield.Float(m[3])
	}},
	{[]string{"Loading model weights took"}, modelV0Re, func(r *Record, m []string) { r.Kind, r.GiB = KindModelLoaded, logfield.Float(m[1]) }},
	{[]string{"Pre-loading model weights"}, hpuRe, func(r *Record, m []string) { r.Kind, r.GiB = KindModelLoaded, logfield.Float(m[1]) }},
	{[]string{"Loading weights took"}, weightsRe, func(r *Record, m []string) { r.Kind, r.Seconds = KindWeightsRead, logfield.Float(m[1]) }},
	{[]string{"torch.compile t", "Compilation finished"}, compileDone, func(r *Record, m []string) {
		r.Kind, r.Seconds = KindCompileDone, logfield.Float(m[1]+m[2])
	}},
	{[]string{"profiling/warmup run", "Memory profiling takes"}, profileRunRe, func(r *Record, m []string) { r.Kind = KindMemoryPool }},
	{[]string{"torch.compile", "Dynamo", "Compiling a graph", "compiled graph", "Cache the graph", "AOT compiled", "for the compilation"},
		compileRe, func(r *Record, m []string) { r.Kind = KindCompile }},
	{[]string{"KV cache size"}, kvTokRe, func(r *Record, m []string) { r.Kind, r.Tokens = KindKVCache, logfield.Int(m[1]) }},
	{[]string{"GPU blocks"}, kvBlocksRe, func(r *Record, m []string) { r.Kind, r.Blocks = KindKVBlocks, logfield.Int(m[1]) }},
	{[]string{"Maximum concurrency"}, concRe, func(r *Record, m []string) {
		r.Kind, r.Tokens, r.Value = KindConcurrency, logfield.Int(m[1]), logfield.Float(m[2])
	}},
	{[]string{"KV cache memory", "kv_cache_size=", "KV Cache is"}, kvMemRe, func(r *Record, m []string) {
		r.Kind, r.GiB = KindKVMemory, logfield.Float(m[1]+m[2]+m[3])
		if w := profWeightsRe.FindStringSubmatch(r.Msg); w != nil {
			r.WeightsGiB = logfield.Float(w[1])
		}
	}},
	{[]string{"Graph capturing finished"}, graphsDone, func(r *Record, m []string) {
		r.Kind, r.Seconds = KindGraphsDone, logfield.Float(m[1])
		if m[2] != "" {
			r.GiB = logfield.Float(m[2])
		}
	}},
	{[]string{"Capturing", "CUDA graph memory", "cuda graph addresses"}, graphsRe, func(r *Record, m []string) { r.Kind = KindGraphs }},
	{[]string{"init engine"}, engineInit, func(r *Record, m []string) { r.Kind, r.Seconds = KindEngineInit, logfield.Float(m[1]) }},
	{[]string{"Starting vLLM", "Uvicorn running", "startup complete", "Available routes"}, readyRe, func(r *Record, m []string) { r.Kind = KindReady }},
	{[]string{"shared memory broadcast"}, watchdogRe, func(r *Record, m []string) { r.Kind, r.Seconds = KindWatchdog, logfield.Float(m[1]) }},
	{[]string{"ProcessGroupNCCL", "Waiting for output"}, waitRe, func(r *Record, m []string) { r.Kind = KindWatchdog }},
	{[]string{"rofil"}, profilerRe, func(r *Record, m []string) { r.Kind = KindProfiler }},
}

func containsAny(s string, needles []string) bool {
	for _, n := range needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

// failureOf names the failure a message shows, and whether it is a root
// cause (strong) or a consequence (a worker died, the engine failed).
func failureOf(msg string) (string, bool) {
	if !containsAny(msg, failNeedles) {
		return "", false
	}
	switch {
	case oomRe.MatchString(msg):
		return FailOOM, true
	case ncclRe.MatchString(msg):
		return FailNCCL, true
	case deviceRe.MatchString(msg):
		return FailDevice, true
	case portRe.MatchString(msg):
		return FailPortInUse, true
	case timeoutRe.MatchString(msg):
		return FailTimeout, true
	case diedRe.MatchString(msg):
		return FailWorkerDied, false
	case engineRe.MatchString(msg):
		return FailEngineFailed, false
	case loaderFailRe.MatchString(msg):
		// A weight loader's own error (fastsafetensors' producer).
		return FailUnknown, false
	case launchRe.MatchString(msg):
		// The launcher's traceback with no exception of its own: the
		// engines did not come up in time.
		return FailTimeout, false
	}
	return "", false
}

// failNeedles: a failure message contains one of these.
var failNeedles = []string{"out of memory", "OutOfMemory", "No available memory", "NCCL error", "nccl", "Timeout", "imed out",
	"ready within", "died", "WorkerProc", "Exception in worker", "EngineCore failed", "Engine core initialization failed",
	"Engine process failed", "Failed core proc", "launch_core_engines", "NPU function error", "acl api failed",
	"synchronize failed", "Inner Error", "CUDA error", "HIP error", "atchdog caught", "Timeout at NCCL", "already in use",
	"EADDRINUSE", "execution failed", "device count", "devId", "No CUDA GPUs", "No HIP GPUs", "driver initialization",
	"exit code", "by signal", "EngineDead", "has died", "dead", "Producer batch", "Consumer error", "fatal error"}

var loadBarDescs = []string{"Loading safetensors checkpoint shards", "Loading safetensors using", "Loading fastsafetensors checkpoint shards", "Loading safetensors using Runai Model Streamer",
	"Multi-thread loading shards", "Loading weights (pinned)", "Loading safetensors (Buffered)",
	"Loading pt checkpoint shards", "Loading checkpoint shards", "Loading gguf", "Loading weights"}

// barFrom starts msg at a known bar's description when one follows some
// other text (a wrapper the cleaner did not know): the bar is read by what
// it says, wherever it stands.
func barFrom(msg string) string {
	for _, d := range barDescs {
		if i := strings.Index(msg, d); i > 0 {
			return msg[i:]
		}
	}
	return msg
}

// barDescs are the bars barFrom looks for: the load bars and the graph bar.
var barDescs = func() []string {
	var out []string
	for _, d := range append(append([]string(nil), loadBarDescs...), "Capturing CUDA graph") {
		out = append(out, d+":")
	}
	return out
}()

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
		v := logfield.Float(m[7])
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
