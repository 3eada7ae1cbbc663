package phases

// Session-wide event kinds: the campaign's life, the connection to the host,
// the operator's notes and markers, and the host's system metadata.
const (
	KindSessionStarted       = "session.started"
	KindSessionConn          = "session.conn"
	KindSessionRTT           = "session.rtt" // a keepalive round trip on a link that stays up (ephemeral)
	KindSessionSystem        = "session.system"
	KindNotesNote            = "notes.note"
	KindNotesMarker          = "notes.marker"
	KindNotesSaved           = "notes.saved"
	KindSessionPhaseStarted  = "session.phase_started"
	KindSessionPhaseFinished = "session.phase_finished"
	KindSessionError         = "session.error"
)

// SessionStarted opens a campaign's journal.
type SessionStarted struct {
	Campaign  string `json:"campaign"`
	Host      string `json:"host"`
	Simulated bool   `json:"simulated,omitempty"`
	Notebook  string `json:"notebook,omitempty"`
	Version   string `json:"version,omitempty"`
}

// ConnState is the state of the link to a host (connecting, up, backoff, failed).
type ConnState struct {
	Host  string  `json:"host"`
	State string  `json:"state"` // "connecting", "up", "down", "backoff", "failed"
	RTTms float64 `json:"rtt_ms,omitempty"`
	Err   string  `json:"err,omitempty"`
	Retry float64 `json:"retry_in_s,omitempty"`
}

// SystemInfo is gathered from the host once per campaign.
type SystemInfo struct {
	Host          string   `json:"host"`
	GPUName       string   `json:"gpu_name,omitempty"`
	GPUCount      int      `json:"gpu_count,omitempty"`
	GPUMemoryMiB  int      `json:"gpu_memory_mib,omitempty"`
	Driver        string   `json:"driver,omitempty"`
	CUDA          string   `json:"cuda,omitempty"`
	Torch         string   `json:"torch,omitempty"`
	VLLM          string   `json:"vllm,omitempty"`
	LaunchCommand string   `json:"launch_command,omitempty"`
	Model         string   `json:"model,omitempty"`
	ModelSummary  string   `json:"model_summary,omitempty"`
	Extra         []string `json:"extra,omitempty"`
}

// Note is a timestamped line the operator typed. The notebook lists it, as
// typed, in the section of the phase its pane belongs to.
type Note struct {
	Text string `json:"text"`
	Pane string `json:"pane,omitempty"` // the pane's title or phase ("Server/Load", "macro")
}

// Marker is a labelled point on a phase's timeline.
type Marker struct {
	Label string `json:"label"`
	Pane  string `json:"pane,omitempty"` // as in Note
}

// NotebookSaved says the notebook was written (the event's time is when),
// or, with Err, that writing it failed. It is not journalled; it is how the
// cockpit learns the notebook's state.
type NotebookSaved struct {
	Path string `json:"path"`
	// Failed is true when the notebook was not written; Err says why (or,
	// with Failed false, what went wrong beside it, e.g. its charts).
	Failed bool   `json:"failed,omitempty"`
	Err    string `json:"err,omitempty"`
}

// PhaseStarted / PhaseFinished bracket one run of a phase.
type PhaseStarted struct {
	Name   string `json:"name"`
	Params any    `json:"params,omitempty"`
}

// PhaseFinished ends one run of a phase; Err is empty unless it failed.
// Outcome is OutcomeDone, OutcomeCancelled or OutcomeFailed (empty in
// journals written before it was recorded).
type PhaseFinished struct {
	Name    string `json:"name"`
	Outcome string `json:"outcome,omitempty"`
	Err     string `json:"err,omitempty"`
}

// ErrorEvent is a failure worth keeping that belongs to no phase result.
type ErrorEvent struct {
	Where string `json:"where"`
	Err   string `json:"err"`
}

func init() {
	Register(KindSessionStarted, Session, SessionStarted{}, false)
	Register(KindSessionConn, Session, ConnState{}, false)
	Register(KindSessionRTT, Session, ConnState{}, true)
	Register(KindSessionSystem, Session, SystemInfo{}, false)
	Register(KindNotesNote, Notes, Note{}, false)
	Register(KindNotesMarker, Notes, Marker{}, false)
	Register(KindNotesSaved, Notes, NotebookSaved{}, true)
	Register(KindSessionPhaseStarted, Session, PhaseStarted{}, false)
	Register(KindSessionPhaseFinished, Session, PhaseFinished{}, false)
	Register(KindSessionError, Session, ErrorEvent{}, false)
}
