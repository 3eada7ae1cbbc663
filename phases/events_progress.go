package phases

// KindProgress is where a long headless command stands, said every few
// seconds (ephemeral: the journal has the events it is made from).
const KindProgress = "progress"

// CommandProgress is where a long command stands: the phase running, the
// run's step, the sweep's level, what is done of what is planned, and how
// long is left (an estimate from the pace so far; 0 when unknown).
type CommandProgress struct {
	Phase      string  `json:"phase,omitempty"`
	Step       string  `json:"step,omitempty"`
	StepIndex  int     `json:"step_index,omitempty"` // 1-based
	Steps      int     `json:"steps,omitempty"`
	Level      string  `json:"level,omitempty"`       // e.g. "C=8"
	LevelIndex int     `json:"level_index,omitempty"` // 1-based
	Levels     int     `json:"levels,omitempty"`
	Done       int     `json:"done"`
	Planned    int     `json:"planned,omitempty"`
	Unit       string  `json:"unit,omitempty"` // requests, GEMM timings, …
	ElapsedS   float64 `json:"elapsed_s"`
	// ETAS is the time left of what runs now (the level, the script, the
	// load); PhaseETAS of the whole phase (the sweep's levels still to
	// come at the pace of those done).
	ETAS      float64 `json:"eta_s,omitempty"`
	PhaseETAS float64 `json:"phase_eta_s,omitempty"`
	Text      string  `json:"text"`
}

func init() {
	Register(KindProgress, Session, CommandProgress{}, true)
}
