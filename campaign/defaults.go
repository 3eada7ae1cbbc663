package campaign

import (
	"time"

	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote/sim"
)

// This file is the one home of every default value: the campaign file's
// (Defaults), the headless commands' flags, the cockpit's quick paths and
// the demo read them here. The engines under phases/ hold none: each
// checks its configuration (Validate) and refuses one that lacks a value.

// The sweep's defaults (the macro section).
var (
	// DefaultConcurrency is the concurrency ladder a sweep climbs.
	DefaultConcurrency = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
)

const (
	// DefaultRequests is the measured requests per level.
	DefaultRequests = 64
	// DefaultWarmup is the requests per level sent before the measured ones.
	DefaultWarmup = 4
	// DefaultInputLen and DefaultOutputLen are the prompt and output tokens.
	DefaultInputLen  = 256
	DefaultOutputLen = 256
	// DefaultRequestTimeout bounds one request of a sweep, from its send
	// to its last byte (sweep --timeout).
	DefaultRequestTimeout = 10 * time.Minute
	// DefaultClientBoundLag is the p99 send lag above which a level is
	// flagged client bound.
	DefaultClientBoundLag = 10 * time.Millisecond
	// DefaultSearchTolerance is how close an SLO search's bounds come:
	// upper - lower at most this share of lower.
	DefaultSearchTolerance = 0.05
	// DefaultSearchRate is a rate search's first rung, in requests per
	// second, when macro.rate is 0.
	DefaultSearchRate = 1.0
	// DefaultBurstiness is the open loop's gamma shape: 1 is Poisson.
	DefaultBurstiness = 1.0
)

// The capture's defaults (the profile section and the profile command).
const (
	// DefaultProfileSteps is how many engine steps one capture window records.
	DefaultProfileSteps = 50
	// DefaultProfileStopTimeout bounds stop_profile, which blocks while
	// the traces flush (minutes on a large model).
	DefaultProfileStopTimeout = 30 * time.Minute
	// DefaultProfileRemoteOver is the trace size above which a trace is
	// summarised on the host rather than read over the connection.
	DefaultProfileRemoteOver = 32 << 20
	// DefaultProfileTop is how many kernels a capture's summary lists: as
	// many as the trace and table parsers list.
	DefaultProfileTop = profile.TopN
)

// DefaultPython is the interpreter the scripts run with on the host.
const DefaultPython = "python3"

// The load's defaults (the server and load sections).
const (
	// DefaultLogPath is where the server logs when server.log names no file.
	DefaultLogPath = "/var/log/vllm/server.log"
	// DefaultStallAfter is the least silence that is a stall.
	DefaultStallAfter = 5 * time.Minute
	// DefaultPollInterval is the nvidia-smi and /health period.
	DefaultPollInterval = time.Second
	// DefaultSnapshotEvery is how often a GPU snapshot is journalled
	// during a load.
	DefaultSnapshotEvery = 10 * time.Second
	// DefaultDiagnoseWindow is how long a stall diagnosis measures CPU
	// use and reads over.
	DefaultDiagnoseWindow = 2 * time.Second
	// DefaultServerStopTimeout bounds a server's stop: its exit and its
	// GPU memory released.
	DefaultServerStopTimeout = 3 * time.Minute
	// DefaultReleasedBelowGiB is the GPU memory under which a stopped
	// server's GPUs count as released.
	DefaultReleasedBelowGiB = 2.0
)

// The GPU benchmarks' defaults (the micro and nccl sections).
var (
	// DefaultBatch are the decode batch sizes micro and nccl time.
	DefaultBatch = []int{1, 8, 64, 128}
	// DefaultTokens are the All-to-All sizes nccl times, in tokens per GPU.
	DefaultTokens = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
)

const (
	// DefaultWorkDir is where the benchmarks' scripts are uploaded on the
	// host: a folder of the host user's own, made 0700 ({uid} is their uid).
	DefaultWorkDir = "/tmp/profdeck-{uid}"
	// DefaultTorchrun is the NCCL benchmark's launcher.
	DefaultTorchrun = "torchrun"
	// DefaultMasterPort is torchrun's rendezvous port across nodes.
	DefaultMasterPort = 29500
)

// The simulated host's defaults (the sim section).
const (
	// DefaultSimProfilerFlush is how long the simulated stop_profile
	// flushes its traces when sim.profiler_flush is left out; a 0 written
	// there is no delay.
	DefaultSimProfilerFlush = sim.DefaultProfilerFlush
)

// The doctor's defaults.
const (
	// DefaultDoctorTimeout bounds each of the doctor's checks.
	DefaultDoctorTimeout = 30 * time.Second
	// DefaultTraceGiB is the free space the doctor wants for the
	// profiler's traces.
	DefaultTraceGiB = 10.0
)
