package load

import (
	"context"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/diagnose"
)

// diagnoseTimeout bounds one diagnosis (py-spy on many ranks takes a while).
const diagnoseTimeout = 3 * time.Minute

// diagConfig is the diagnosis's configuration from the watcher's state; it
// is built on the loop goroutine, which owns the tracker.
func (s *run) diagConfig(trigger string) diagnose.Config {
	cfg := diagnose.Config{Host: s.w.cfg.Host, Container: s.w.cfg.Container, GPUApps: true,
		Window: s.w.cfg.DiagnoseWindow, Ranks: s.tr.Ranks(), Stage: s.tr.Stage(), Trigger: trigger}
	if st := s.tr.stall; st != nil {
		cfg.Stalled = time.Duration(st.ForS * float64(time.Second))
	}
	return cfg
}

// diagnose takes a diagnosis and emits it; a failure to take one is an
// error event, never a crash of the watcher.
func diagnoseAndEmit(ctx context.Context, w *Watcher, em *phases.Emitter, cfg diagnose.Config) *phases.Diagnosis {
	ctx, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	defer cancel()
	if w.cfg.PIDFile != "" {
		if b, err := w.cfg.Host.ReadFile(ctx, w.cfg.PIDFile); err == nil {
			if pid := parseRecord(b).PID; pid > 0 {
				cfg.PIDs, cfg.PGID = []int{pid}, pid
			}
		}
	}
	d, err := diagnose.Diagnose(ctx, cfg)
	if err != nil {
		em.Emit(ctx, phases.KindSessionError, phases.ErrorEvent{Where: "load: diagnosis on " + w.cfg.Host.Name(), Err: err.Error()})
		return nil
	}
	em.Emit(ctx, phases.KindLoadDiagnosis, *d)
	return d
}

// diagnoseAsync runs a diagnosis beside the loop (one at a time), so the
// watcher keeps following the log and the GPUs meanwhile.
func (s *run) diagnoseAsync(trigger string) {
	if s.w.cfg.NoDiagnosis || !s.diagBusy.CompareAndSwap(false, true) {
		return
	}
	cfg := s.diagConfig(trigger)
	go func() {
		defer s.diagBusy.Store(false)
		diagnoseAndEmit(s.ctx, s.w, s.em, cfg)
	}()
}

// diagnoseNow runs a diagnosis and waits for it (the headless follow's
// ending on a stall).
func (s *run) diagnoseNow(trigger string) *phases.Diagnosis {
	if s.w.cfg.NoDiagnosis {
		return nil
	}
	return diagnoseAndEmit(s.ctx, s.w, s.em, s.diagConfig(trigger))
}
