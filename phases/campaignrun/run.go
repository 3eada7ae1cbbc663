// Package campaignrun is the campaign run: the whole campaign in its fixed order on
// one host (make sure the server serves, sweep concurrency, stop the server
// to free the GPUs, time the GEMMs, time the collectives, restart with the
// torch profiler, profile, leave the server as asked, write the notebook),
// calling each phase's engine in turn and handling the server between them.
//
// Every step is emitted as a RunStep event when it starts and when it ends
// (done, failed, stalled, skipped with its reason, or stopped when the run
// was interrupted). A run given the journal so far (Config.Prior) takes the
// steps done there for the same model, TP and launch command as done and
// resumes at the first one that is not.
package campaignrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/doctor"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/fleet"
	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/nccl"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote"
)

// The steps, in their order.
const (
	Doctor      = "doctor"
	Serve       = "serve"
	Macro       = "macro"
	FreeGPUs    = "free_gpus"
	Micro       = "micro"
	NCCL        = "nccl"
	Restart     = "profiler_restart"
	Profile     = "profile"
	LeaveServer = "leave_server"
	Notebook    = "notebook"
)

// Steps lists every step in order.
var Steps = []string{Doctor, Serve, Macro, FreeGPUs, Micro, NCCL, Restart, Profile, LeaveServer, Notebook}

// Titles are the steps in words, for checklists and tables.
var Titles = map[string]string{
	Doctor: "doctor (checks)", Serve: "serve", Macro: "sweep (macro)", FreeGPUs: "free the GPUs", Micro: "GEMMs (micro)",
	NCCL: "collectives (nccl)", Restart: "restart with profiler", Profile: "profile",
	LeaveServer: "leave the server", Notebook: "notebook",
}

// stepPhase is the phase (as in --phases) each step belongs to; the server
// handling steps belong to the phases that need them.
var stepPhase = map[string][]string{
	Serve: {phases.Load, phases.Macro}, Macro: {phases.Macro}, FreeGPUs: {phases.Micro, phases.NCCL},
	Micro: {phases.Micro}, NCCL: {phases.NCCL}, Restart: {phases.Profile}, Profile: {phases.Profile},
}

// The ways to leave the server at the end (run.leave_server).
const (
	LeaveServing  = "serving"
	LeaveProfiler = "profiler"
	LeaveStopped  = "stopped"
)

// Config is one campaign run. Each phase's configuration is filled in by the
// caller from the campaign; the run fills in the host and what a step
// learns from an earlier one (the plateau, the server's version).
type Config struct {
	Host     remote.Host
	Identity phases.RunIdentity

	// Doctor, when set, is checked first (the doctor step): a check that
	// fails for a step the run will do stops the run before any load.
	Doctor *doctor.Config

	Server *load.Server // the serving process's lifecycle
	Watch  load.Config  // following a load (its Host is set here)
	// Nodes, when there are several, are followed together (load.Group),
	// the head first; Server then starts and stops every node.
	Nodes []load.Node
	// QuietFollow follows loads without emitting their events, where
	// another watcher (the cockpit's Load pane) already reports them.
	QuietFollow bool
	// Version is the server's vLLM version when the campaign names it
	// (otherwise the one its log printed); it picks the profiler's flags.
	Version     string
	ProfilerDir string

	Sweep macro.Config
	// Loadgen is where the sweep's load generator runs: onhost.Here
	// ("" too) or onhost.OnHost (on Host, which gets a copy of this
	// program); MetricsURL is the server's /metrics as the host sees it.
	Loadgen, MetricsURL string
	// Agents, when set, run the sweep's levels over several load agents
	// (phases/macro/fleet) instead.
	Agents []fleet.Member

	ModelSpec string // the model for micro and NCCL (preset, config path or name)
	MicroPlan model.Options
	Micro     micro.Config
	NCCLPlan  model.Options
	NCCL      nccl.Config

	Profile profile.Config // its Concurrency is set here: 1 and the plateau

	Leave string // LeaveServing, LeaveProfiler or LeaveStopped
	// Order is the steps' order: OrderOneLoad, or OrderClassic ("" too).
	Order string

	// Phases, when not empty, limits the run to the steps of these phases
	// (load, macro, micro, nccl, profile); the notebook is always written.
	Phases []string
	// Redo names steps or phases to do again although the journal has them
	// done.
	Redo []string
	// Params are each step's own parameters, by step ("macro.concurrency":
	// "1,2,4"): a step done with others is done again, unless Keep.
	Params map[string]map[string]string
	Keep   bool
	// Prior is the journal so far: steps done there for Identity are
	// not done again.
	Prior []phases.Event

	// Variants are served in turn after the baseline's steps, each after
	// its prediction (Predict, when set, from the journal so far), running
	// VariantSteps (default the sweep).
	Variants     []phases.VariantSpec
	VariantSteps []string
	Predict      func(spec phases.VariantSpec) phases.VariantPrediction

	// WriteNotebook writes the notebook and returns its path.
	WriteNotebook func(ctx context.Context) (string, error)

	Now func() time.Time
}

// StepResult is how one step of the run ended.
type StepResult struct {
	Name     string    `json:"name"`
	State    string    `json:"state"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Reason   string    `json:"reason,omitempty"`
	// Earlier is true for a step taken as done from the journal.
	Earlier bool `json:"earlier,omitempty"`
	// Variant names the variant a step served or ran for (its load is a
	// serve step); empty for the baseline's steps.
	Variant string `json:"variant,omitempty"`
}

// Result is the whole run.
type Result struct {
	Steps       []StepResult `json:"steps"`
	Notebook    string       `json:"notebook,omitempty"`
	Plateau     int          `json:"plateau,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"`
	// Variants are how this run's variants ended.
	Variants []phases.VariantFinished `json:"variants,omitempty"`
}

// Complete reports whether every step of the run is done.
func (r *Result) Complete() bool {
	for _, s := range r.Steps {
		if s.State != phases.StepDone {
			return false
		}
	}
	for _, v := range r.Variants {
		if v.State != phases.StepDone {
			return false
		}
	}
	return !r.Interrupted
}

// Plan is the run's steps in the classic order: those of the selected
// phases (StepsOf gives them in either order).
func Plan(sel []string) []string {
	return StepsOf(OrderClassic, sel)
}

// PhaseNames are the names --phases takes.
var PhaseNames = []string{phases.Load, phases.Macro, phases.Micro, phases.NCCL, phases.Profile}

// CheckNames checks --phases and --redo words: phases, or (for redo) steps.
func CheckNames(words []string, steps bool) error {
	ok := map[string]bool{}
	for _, p := range PhaseNames {
		ok[p] = true
	}
	if steps {
		for _, s := range Steps {
			ok[s] = true
		}
	}
	for _, w := range words {
		if !ok[w] {
			if steps {
				return fmt.Errorf("%q is neither a phase (load, macro, micro, nccl, profile) nor a step (%v)", w, Steps)
			}
			return fmt.Errorf("%q is not a phase (load, macro, micro, nccl, profile)", w)
		}
	}
	return nil
}

// ErrInterrupted is returned when ctx ended during the run: the step in
// flight was stopped and journalled as such.
var ErrInterrupted = errors.New("interrupted")

// Run runs the campaign's remaining steps and emits their events (and the
// phases' own) through em. It returns the result, also when interrupted
// (with ErrInterrupted); a step's failure is in its result, not an error.
func Run(ctx context.Context, cfg Config, em *phases.Emitter) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, &phases.InputError{Err: fmt.Errorf("run: %w", err)}
	}
	if err := Check(ctx, cfg); err != nil {
		return nil, err
	}
	r := newRunner(cfg, em)
	defer r.close()
	// The server's events pass through the runner like the phases' (the
	// Server may be shared with the cockpit's Load pane).
	return r.run(load.WithEmitter(ctx, r.em))
}
