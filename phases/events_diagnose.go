package phases

// KindLoadDiagnosis is a stall diagnosis: why a load stopped, with the evidence
// gathered from the host. It is journalled with the stall it explains.
const KindLoadDiagnosis = "load.diagnosis"

// Diagnosis is a verdict on a load that stopped making progress (or on the
// server at any time, when the operator asks), and the evidence behind it.
type Diagnosis struct {
	Trigger string   `json:"trigger"` // "stall" or "request"
	Verdict string   `json:"verdict"` // one line, e.g. "weights I/O stopped (0 B/s for 5 min, GPUs idle)"
	Why     []string `json:"why,omitempty"`
	// Procs are the server's processes as sampled, GPUs its GPUs.
	Procs  []ProcEvidence `json:"procs,omitempty"`
	GPUs   []GPUEvidence  `json:"gpus,omitempty"`
	Ranks  []RankEvidence `json:"ranks,omitempty"`
	Stacks []StackGroup   `json:"stacks,omitempty"`
	// Hints are one-line suggestions (e.g. how to install py-spy).
	Hints []string `json:"hints,omitempty"`
	// Notes say what could not be gathered, and estimates made.
	Notes     []string `json:"notes,omitempty"`
	SampleS   float64  `json:"sample_s"`            // the window CPU and read rates are measured over
	StalledS  float64  `json:"stalled_s,omitempty"` // how long nothing had moved when it was taken
	Simulated bool     `json:"simulated,omitempty"` // taken on the simulated deployment
	Node      string   `json:"node,omitempty"`      // the node it was taken on (several nodes only)
}

// ProcEvidence is one server process over the sampling window.
type ProcEvidence struct {
	PID    int     `json:"pid"`
	Name   string  `json:"name,omitempty"`
	State  string  `json:"state"` // R, S, D, Z, T, or "gone"
	CPUPct float64 `json:"cpu_pct"`
	// ReadBps is bytes read per second from storage; from read calls when
	// storage shows none (a page-cached file), a trickle under 64 KiB/s
	// (sockets, pipes) counting as none.
	ReadBps   float64 `json:"read_bps"`
	ReadTotal int64   `json:"read_total,omitempty"` // bytes read since the process started
	IOKnown   bool    `json:"io_known"`             // /proc/PID/io was readable
	GPU       int     `json:"gpu"`                  // -1 when it holds no GPU
	GPUMemMiB float64 `json:"gpu_mem_mib,omitempty"`
}

// GPUEvidence is one GPU's utilisation and memory when sampled.
type GPUEvidence struct {
	Index   int     `json:"index"`
	UtilPct float64 `json:"util_pct"`
	MemMiB  float64 `json:"mem_mib"`
}

// RankEvidence is one rank's last log line and the stage it reached.
type RankEvidence struct {
	Rank     int    `json:"rank"`
	Stage    string `json:"stage"`
	LastLine string `json:"last_line,omitempty"`
	Behind   bool   `json:"behind,omitempty"` // never reached the stage the others reached
}

// StackGroup is processes whose Python stacks end in the same frames.
type StackGroup struct {
	PIDs   []int    `json:"pids"`
	Ranks  []int    `json:"ranks,omitempty"` // the GPUs (ranks on one host) those processes hold
	Where  string   `json:"where"`           // the innermost frame, "file: function"
	Frames []string `json:"frames"`          // innermost first, a few
}

func init() {
	Register(KindLoadDiagnosis, Load, Diagnosis{}, false)
}
