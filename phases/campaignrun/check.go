package campaignrun

import (
	"context"
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// Validate checks the run's own settings; the error names the field. The
// run fills in no default (the campaign holds them); each phase's
// configuration is checked by its engine when its step starts.
func (cfg Config) Validate() error {
	switch cfg.Leave {
	case LeaveServing, LeaveProfiler, LeaveStopped:
		return nil
	}
	return fmt.Errorf("Leave %q: want %s, %s or %s", cfg.Leave, LeaveServing, LeaveProfiler, LeaveStopped)
}

// Check refuses, before anything starts, a run that cannot do its steps:
// one that must bring the server up (to sweep it, or to restart it with
// the profiler) when the server is not serving, no process of it runs, and
// the campaign has no launch command. The error is an *phases.InputError
// (bad input: the campaign cannot run as written).
func Check(ctx context.Context, cfg Config) error {
	if cfg.Server == nil || strings.TrimSpace(cfg.Server.Settings.Launch) != "" {
		return nil
	}
	r := &runner{cfg: cfg}
	done, redo := DoneSteps(cfg.Prior, cfg.Identity), expandRedo(cfg.Redo)
	if !cfg.Keep {
		for s := range ChangedSteps(done, withPlateau(cfg.Params, JournalPlateau(cfg.Prior, cfg.Identity))) {
			redo[s] = true
		}
	}
	todo := r.todo(StepsOf(cfg.Order, cfg.Phases), done, redo)
	if !todo[Serve] && !todo[Restart] {
		return nil
	}
	if r.healthy(ctx) {
		return nil
	}
	if _, alive := cfg.Server.Running(ctx); alive {
		return nil // a load under way: the serve step follows it
	}
	return &phases.InputError{Err: fmt.Errorf("the server is down (GET %s did not answer 200) and server.launch is empty: start the server, or set server.launch in the campaign file",
		remote.MaskURL(cfg.Watch.HealthURL))}
}
