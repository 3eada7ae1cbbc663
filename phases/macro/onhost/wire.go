package onhost

import (
	"encoding/json"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/hdrsec"
	"github.com/profdeck/profdeck/phases/profile"
)

// AgentCommand is the hidden subcommand that runs the agent on the host.
const AgentCommand = "loadgen-agent"

// down is one line to the agent: the spec first, then one operation each.
type down struct {
	Spec *Spec             `json:"spec,omitempty"`
	Load *profile.LoadSpec `json:"load,omitempty"` // instead of Spec: a profile window's load
	Op   string            `json:"op,omitempty"`   // pause, resume, stop, conc
	N    int               `json:"n,omitempty"`    // conc's concurrency
	At   int64             `json:"at,omitempty"`   // start's time, ns since the epoch on the host's clock
}

// The steering operations.
const (
	opPause  = "pause"
	opResume = "resume"
	opStop   = "stop"
	opConc   = "conc"
	opStart  = "start"
)

// up is one line from the agent: exactly one field is set, except that
// the last line (Done) carries the result and the sweep's error together.
type up struct {
	Event json.RawMessage `json:"event,omitempty"` // a phases.Event, as the journal holds it
	JSONL json.RawMessage `json:"jsonl,omitempty"` // one per-request record
	Log   string          `json:"log,omitempty"`
	// Done ends the stream: the result (nil when the sweep could not
	// start) and the sweep's error.
	Done   bool          `json:"done,omitempty"`
	Result *macro.Result `json:"result,omitempty"`
	// Part is a piece of a result too long for one line (a line is cut
	// at 1 MiB on the way): the pieces come in order before Done, whose
	// Parts says there were some.
	Part  string `json:"part,omitempty"`
	Parts bool   `json:"parts,omitempty"`
	Err   string `json:"err,omitempty"`
	// Input says Err is about what the operator asked for (exit 2);
	// Cancelled that the sweep was cancelled.
	Input     bool `json:"input,omitempty"`
	Cancelled bool `json:"cancelled,omitempty"`
	// A profile window's load: a request sent, or one ended (its
	// completion tokens, or its error).
	Sent   bool   `json:"sent,omitempty"`
	Ended  bool   `json:"ended,omitempty"`
	Tokens int    `json:"tokens,omitempty"`
	ReqErr string `json:"req_err,omitempty"`
	// Ready is the agent's first line, sent once it has read the first
	// line from here: the answer supervise waits for.
	Ready bool `json:"ready,omitempty"`
	// Started is the host's clock, in nanoseconds since the epoch, when
	// the agent started a sweep given a start (Spec.StartAt).
	Started int64 `json:"started_ns,omitempty"`
	// Hist is what the agent measured since its last one (Spec.Histograms).
	Hist *hdrsec.Batch `json:"hist,omitempty"`
}
