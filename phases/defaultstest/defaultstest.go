// Package defaultstest holds, for the engines' tests, the values the
// campaign gives by default: each engine's Complete test helper fills what
// a test leaves out from its table here (Fill), and the campaign's tests
// check each table against the campaign's own mapping of its defaults to
// that engine (Differences), so that a default changed on one side only
// fails a test. The copy exists because an engine may not import the
// campaign. Only tests import it; it imports no engine, so an engine's
// internal tests can import it too.
package defaultstest

import "time"

// Each table is a struct whose fields are named as the engine
// configuration's fields they fill, with the same values as the campaign's
// mapping of campaign.Defaults() to that engine.

// Macro is a sweep's defaults (macro.Config; campaign's SweepConfig).
var Macro = struct {
	API                         string
	Concurrency                 []int
	Requests                    int
	InputLen, OutputLen         int
	Timeout, ClientBoundLag     time.Duration
	Repeat                      int
	Arrivals                    string
	Burstiness                  float64
	LatencyFrom                 string
	SearchTolerance, SearchFrom float64
}{
	API: "completions", Concurrency: []int{1, 2, 4, 8, 16, 32, 64, 128, 256}, Requests: 64,
	InputLen: 256, OutputLen: 256, Timeout: 10 * time.Minute, ClientBoundLag: 10 * time.Millisecond,
	Repeat: 1, Arrivals: "poisson", Burstiness: 1, LatencyFrom: "sent", SearchTolerance: 0.05, SearchFrom: 1,
}

// Profile is a capture's defaults (profile.Config; campaign's ProfileConfig).
var Profile = struct {
	API                 string
	Steps               int
	Concurrency         []int
	InputLen, OutputLen int
	StopTimeout         time.Duration
	RemoteOver          int64
	Python              string
	Top                 int
}{
	API: "completions", Steps: 50, Concurrency: []int{1}, InputLen: 256, OutputLen: 256,
	StopTimeout: 30 * time.Minute, RemoteOver: 32 << 20, Python: "python3", Top: 15,
}

// Load is the load watcher's defaults (load.Config; campaign's LoadConfig).
var Load = struct {
	LogPath                                         string
	StallAfter, Poll, SnapshotEvery, DiagnoseWindow time.Duration
}{
	LogPath: "/var/log/vllm/server.log", StallAfter: 5 * time.Minute, Poll: time.Second,
	SnapshotEvery: 10 * time.Second, DiagnoseWindow: 2 * time.Second,
}

// Micro is the GEMM benchmarks' defaults (micro.Config; campaign's MicroConfig).
var Micro = struct{ Python, WorkDir string }{Python: "python3", WorkDir: "/tmp/profdeck-{uid}"}

// NCCL is the NCCL benchmarks' defaults (nccl.Config; campaign's NCCLConfig).
var NCCL = struct {
	Torchrun, Python, WorkDir string
	Batch, Tokens             []int
	MasterPort                int
}{
	Torchrun: "torchrun", Python: "python3", WorkDir: "/tmp/profdeck-{uid}", Batch: []int{1, 8, 64, 128},
	Tokens: []int{1, 2, 4, 8, 16, 32, 64, 128, 256}, MasterPort: 29500,
}
