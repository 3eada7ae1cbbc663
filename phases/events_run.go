package phases

// Campaign-run event kinds: one run of the whole campaign in order (serve,
// sweep, free the GPUs, micro, NCCL, restart with the profiler, profile,
// leave the server, notebook), each step journalled as it starts and ends.
const (
	KindRunStarted  = "run.started"
	KindRunStep     = "run.step"
	KindRunChanged  = "run.changed"
	KindRunFinished = "run.finished"
)

// Step states. A step that is started and never ended in the journal was cut
// short by a crash; a resumed run does it again.
const (
	StepStarted = "started"
	StepDone    = "done"
	StepFailed  = "failed"
	StepStalled = "stalled"
	StepSkipped = "skipped"
	StepStopped = "stopped" // interrupted (Ctrl-C): what it gathered is kept
	StepPending = "pending" // not reached (the run was interrupted before it)
)

// RunIdentity is what a campaign's steps were done for: a step done for
// another model, tensor-parallel size or launch command is not done for
// this one.
type RunIdentity struct {
	Model  string `json:"model"`
	TP     int    `json:"tp"`
	Launch string `json:"launch,omitempty"` // redacted
}

// RunStarted opens one run of the campaign: the steps it will go through
// and those it takes as done from the journal.
type RunStarted struct {
	Identity RunIdentity `json:"identity"`
	Steps    []string    `json:"steps"`
	Resumed  []string    `json:"resumed,omitempty"` // done earlier, not done again
	Redo     []string    `json:"redo,omitempty"`
	// Changed are the steps done earlier with other parameters, each with
	// what changed ("macro.concurrency: 1,2 → 1,8"): re-run, or kept when
	// Kept (--keep).
	Changed map[string][]string `json:"changed,omitempty"`
	Kept    bool                `json:"kept,omitempty"`
}

// RunChanged names the steps done earlier that the sweep this run did made
// out of date (measured at another workload or plateau than it found),
// each with what changed: done again, or kept when Kept (--keep).
type RunChanged struct {
	Changed map[string][]string `json:"changed"`
	Kept    bool                `json:"kept,omitempty"`
}

// RunStep is one step's start or end.
type RunStep struct {
	Name   string `json:"name"`
	State  string `json:"state"` // StepStarted, StepDone, …
	Reason string `json:"reason,omitempty"`
	// Params are the step's own parameters (done steps): a later run
	// re-runs the step when they differ.
	Params map[string]string `json:"params,omitempty"`
}

// RunFinished closes a run.
type RunFinished struct {
	Notebook    string `json:"notebook,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

func init() {
	Register(KindRunStarted, Session, RunStarted{}, false)
	Register(KindRunChanged, Session, RunChanged{}, false)
	Register(KindRunStep, Session, RunStep{}, false)
	Register(KindRunFinished, Session, RunFinished{}, false)
}
