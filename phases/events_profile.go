package phases

// Profile-phase event kinds.
const (
	KindProfileStep    = "profile.step" // capture progress: "check", "start_profile", "load", "stop_profile", "collect", "summarise" (ephemeral)
	KindProfileSummary = "profile.summary"
	KindProfileFailed  = "profile.failed" // a capture that did not produce a summary, and why
)

// ProfileStep is one step of a capture, with elapsed time.
type ProfileStep struct {
	Step     string  `json:"step"`
	ElapsedS float64 `json:"elapsed_s"` // since the step began
	Detail   string  `json:"detail,omitempty"`
	Done     bool    `json:"done,omitempty"` // the step finished
}

// Kernel is one device kernel in a profile summary.
type Kernel struct {
	Name       string  `json:"name"`
	SelfCUDAUs float64 `json:"self_cuda_us"`
	Calls      int     `json:"calls"`
	Category   string  `json:"category"`
}

// ProfileSummary is the parsed profile: category split and top kernels.
// Only device kernels (and memory copies) count: CPU-side operators such as
// aten::mm, whose device time is the time of the kernels they launch, and
// GPU-side user annotations are left out so nothing is counted twice.
type ProfileSummary struct {
	Source             string             `json:"source"` // the file the figures come from, and how it was read
	TotalCUDAUs        float64            `json:"total_cuda_us"`
	Categories         map[string]float64 `json:"categories"` // gemm, attention, moe, communication, other (µs)
	CommunicationShare float64            `json:"communication_share"`
	Top                []Kernel           `json:"top"`
	KernelCount        int                `json:"kernel_count,omitempty"` // distinct kernels listed
	UnlistedUs         float64            `json:"unlisted_us,omitempty"`  // device time of rows the table cut, counted as other
	// Level is the concurrency of this capture window (0 for a capture of
	// several levels at once, as older journals have).
	Level int `json:"level,omitempty"`
	// Window is the kind of capture window: WindowDecode (long requests,
	// every stream decoding: decode steps only; "" in older journals) or
	// WindowSteady (the sweep's own traffic: arrivals, prefills and
	// completions going on). WindowS is its wall time and StepMix what
	// the engine ran in it, from /metrics read at its start and at its
	// last poll; DecodeSteps counts the steps up to stop_profile (what the
	// trace holds, a few more than StepMix.Steps).
	Window string `json:"window,omitempty"`
	// UnprofiledStepMs is a decode window's wall time per engine step
	// with the profiler off, measured on the same load just before it
	// (the profiler adds host time to every step it records); 0 when not
	// measured.
	UnprofiledStepMs float64  `json:"unprofiled_step_ms,omitempty"`
	WindowS          float64  `json:"window_s,omitempty"`
	StepMix          *StepMix `json:"step_mix,omitempty"`
	// TraceSteps are the engine steps counted in rank 0's trace (step
	// annotations), TraceStepsFrom says how.
	TraceSteps     int    `json:"trace_steps,omitempty"`
	TraceStepsFrom string `json:"trace_steps_from,omitempty"`
	// PerStepUs is device time per decode step by category (µs).
	PerStepUs         map[string]float64 `json:"per_step_us,omitempty"`
	DecodeSteps       int                `json:"decode_steps,omitempty"`
	DecodeStepsSource string             `json:"decode_steps_source,omitempty"`
	CommPerStepUs     float64            `json:"comm_per_step_us,omitempty"` // communication µs per decode step
	GPUPerStepUs      float64            `json:"gpu_per_step_us,omitempty"`  // device µs per decode step
	Requests          int                `json:"requests,omitempty"`         // requests completed by the driven load, all levels
	Concurrency       []int              `json:"concurrency,omitempty"`
	OutputTokens      int64              `json:"output_tokens,omitempty"` // from the server's usage
	StopS             float64            `json:"stop_s,omitempty"`        // how long stop_profile took (trace flush)
	ProfilerDir       string             `json:"profiler_dir,omitempty"`
	Files             []string           `json:"files,omitempty"` // new files in the profiler directory
	Notes             []string           `json:"notes,omitempty"`
	Simulated         bool               `json:"simulated,omitempty"` // captured on the simulated deployment
}

// Profile window kinds.
const (
	WindowDecode = "decode"
	WindowSteady = "steady"
)

// ProfileFailed says why a capture ended without a summary.
type ProfileFailed struct {
	Step  string `json:"step"`
	Error string `json:"error"`
	// ProfilerDisabled is true when the server answered 404: it was not
	// started with the torch profiler.
	ProfilerDisabled bool `json:"profiler_disabled,omitempty"`
	// ServerDown is true when nothing answered at the server's URL.
	ServerDown bool `json:"server_down,omitempty"`
}

func init() {
	Register(KindProfileStep, Profile, ProfileStep{}, true)
	Register(KindProfileSummary, Profile, ProfileSummary{}, false)
	Register(KindProfileFailed, Profile, ProfileFailed{}, false)
}
