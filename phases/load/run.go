package load

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
)

// failGrace is how long a failure waits for its root cause (an OOM
// traceback follows "Worker died" by milliseconds) before Until ends.
const failGrace = 2 * time.Second

// run is one Watcher loop's state; only the loop goroutine touches it.
type run struct {
	w      *Watcher
	em     *phases.Emitter
	ctx    context.Context
	tr     *Tracker
	parser *vllmlog.Parser

	lastSnap  time.Time
	snapGPUs  []phases.GPU // the GPUs as the last journalled snapshot had them
	resetAt   time.Time
	failAt    time.Time
	smiErr    string
	smiOK     bool // nvidia-smi answered once: losing it later is losing the node
	healthErr string
	ready     bool
	stalled   bool
	version   string
	stallFrom time.Time
	out       phases.Brackets // the load's run as emitted: open from PhaseStarted "load" to its finish
	failed    bool            // the current load's run was closed as failed: it does not open again
	until     bool            // the headless follow: a stall's diagnosis is taken as it ends
	diagBusy  atomic.Bool
	tail      []string  // the log's last lines, for an exit
	seenAlive int       // the launch's pid, once seen running in this load
	goneAt    time.Time // when a poll first saw the launch's group gone (a second look confirms it)
	exit      *exitSeen // the launch's exit during this load
	offset    int64     // how far the log is read

}

// phaseStart opens the notebook's run for the current load once it shows
// life (log lines or memory growth).
func (s *run) phaseStart() {
	if s.out.Open(phases.Load) || s.failed || !s.tr.armed || s.tr.ready || s.tr.stopped {
		return
	}
	params := map[string]any{"host": s.w.cfg.Host.Name(), "log": s.w.cfg.LogPath, "load": s.tr.gen}
	if s.w.cfg.ExpectGiB > 0 {
		params["expect_gib"] = s.w.cfg.ExpectGiB
	}
	s.emit(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: phases.Load, Params: params})
}

// phaseFinish closes it: err is empty when the server became ready.
func (s *run) phaseFinish(err string) {
	if !s.out.Open(phases.Load) {
		return
	}
	fin := phases.PhaseFinished{Name: phases.Load, Outcome: phases.OutcomeDone}
	switch {
	case err == "stopped", strings.HasPrefix(err, "replaced"):
		fin.Outcome, fin.Err = phases.OutcomeCancelled, err
	case err != "":
		fin.Outcome, fin.Err = phases.OutcomeFailed, err
		s.failed = true
	}
	s.emit(phases.KindSessionPhaseFinished, fin)
}

func (s *run) now() time.Time { return s.w.cfg.Now() }

// emit sends one of the load's events, folding its brackets in.
func (s *run) emit(kind string, data any) {
	s.out.Step(phases.Event{Kind: kind, Data: data})
	s.em.Emit(s.ctx, kind, data)
}

func (s *run) logLine(rank int, level, text string) {
	s.emit(phases.KindLoadLog, phases.LogLine{Rank: rank, Level: level, Text: text})
}

func (s *run) control(c control) {
	now := s.now()
	switch c {
	case ctlStopped:
		s.phaseFinish("stopped")
		s.tr.SetStopped(now, true)
		s.ready, s.stalled = false, false
		s.emitState(now)
	case ctlDiagnose:
		s.diagnoseAsync("request")
	case ctlReady:
		if s.tr.SetReady(now) != nil { // the head's milestone tells it
			s.ready = true
			s.phaseFinish("")
		}
		s.emitState(now)
	case ctlStarted:
		if now.Sub(s.resetAt) > 10*time.Second {
			// The log was not replaced (an appending launch): start over
			// from here.
			s.newLoad(now)
		}
		s.tr.SetStopped(now, false)
		s.emitState(now)
	}
}

func (s *run) newLoad(now time.Time) {
	s.phaseFinish("replaced by a new load (restart or new log)")
	s.parser.Reset()
	s.tr.Reset(now)
	s.resetAt, s.failAt = now, time.Time{}
	s.ready, s.stalled, s.version = false, false, ""
	s.tail, s.seenAlive, s.goneAt, s.exit, s.failed = nil, 0, time.Time{}, nil, false
}

func (s *run) line(ev remote.FollowEvent) {
	now := s.now()
	if ev.Reset {
		s.offset = 0
		s.newLoad(now)
		note := "the log was truncated or replaced: following a new load"
		if ev.Note != "" {
			note += " (" + ev.Note + ")"
		}
		s.logLine(-1, "NOTE", note)
		return
	}
	s.offset = ev.Offset
	s.keepTail(ev.Line)
	for _, r := range s.parser.Line(ev.Line) {
		ms, fail := s.tr.Record(now, r)
		if r.Kind == vllmlog.KindVersion {
			if s.version != "" {
				continue // the API server and the engine both print it
			}
			s.version = r.Version
		}
		if r.Relevant() {
			s.emit(phases.KindLoadLog, phases.LogLine{Rank: r.Rank, Level: r.Level, Text: r.Text, Msg: r.Msg})
		}
		if ms != nil {
			s.emit(phases.KindLoadMilestone, *ms)
		}
		if m := detailMilestone(r, now.Sub(s.tr.start).Seconds()); m != nil {
			m.Load = s.tr.gen
			s.emit(phases.KindLoadMilestone, *m)
		}
		if fail != nil {
			if s.failAt.IsZero() {
				s.failAt = now
			}
			s.emit(phases.KindLoadFailure, *fail)
		}
	}
	s.phaseStart()
}

// detailMilestone is a journalled fact with a value (weights size, KV cache
// size, graph capture time) that does not start a new stage.
func detailMilestone(r vllmlog.Record, at float64) *phases.Milestone {
	m := &phases.Milestone{AtS: at, Line: r.Text}
	switch r.Kind {
	case vllmlog.KindModelLoaded:
		m.Stage, m.Value = "weights_loaded", fmt.Sprintf("%.2f GiB", r.GiB)
		if r.Seconds > 0 {
			m.Value += fmt.Sprintf(" in %.0f s", r.Seconds)
		}
		if r.Rank > 0 {
			return nil // one per load is enough for the story; rank 0 (or unknown) tells it
		}
	case vllmlog.KindKVCache:
		m.Stage, m.Value = "kv_cache_size", fmt.Sprintf("%s tokens", units.Int(r.Tokens))
		if r.Rank > 0 {
			return nil // SGLang's ranks each print their pool: rank 0 tells it
		}
	case vllmlog.KindCompileDone:
		m.Stage, m.Value = "compile_done", fmt.Sprintf("%.1f s", r.Seconds)
	case vllmlog.KindGraphsDone:
		m.Stage, m.Value = "cuda_graphs_done", fmt.Sprintf("%.0f s", r.Seconds)
		if r.Rank > 0 {
			return nil
		}
	case vllmlog.KindVersion:
		m.Stage, m.Value = "vllm_version", r.Version
	default:
		return nil
	}
	return m
}

func (s *run) poll(p pollResult) {
	now := p.at
	s.proc(now, p.proc)
	if p.err != nil {
		if msg := p.err.Error(); msg != s.smiErr {
			if s.smiErr == "" && s.smiOK && s.w.cfg.Node != "" {
				s.emit(phases.KindLoadServer, phases.ServerEvent{Action: "node_lost", Node: s.w.cfg.Node,
					Detail: "node " + s.w.cfg.Node + " lost: " + msg})
			}
			s.smiErr = msg
			s.emit(phases.KindSessionError, phases.ErrorEvent{Where: "load: nvidia-smi on " + s.w.cfg.Host.Name(), Err: msg})
			s.logLine(-1, "ERROR", "nvidia-smi: "+msg)
		}
	} else {
		if s.smiErr != "" && s.w.cfg.Node != "" {
			s.emit(phases.KindLoadServer, phases.ServerEvent{Action: "node_back", Node: s.w.cfg.Node,
				Detail: "node " + s.w.cfg.Node + " back: nvidia-smi answers again"})
		}
		s.smiErr, s.smiOK = "", true
		s.tr.Sample(now, p.gpus)
		sample := phases.GPUSample{Host: s.w.cfg.Host.Name(), GPUs: toPhaseGPUs(p.gpus)}
		s.emit(phases.KindLoadGPU, sample)
		if now.Sub(s.lastSnap) >= s.w.cfg.SnapshotEvery || movedSince(s.snapGPUs, sample.GPUs) {
			s.lastSnap, s.snapGPUs = now, sample.GPUs
			s.emit(phases.KindLoadGPUCoarse, sample)
		}
	}
	switch {
	case p.health.ok:
		s.healthErr = ""
		if ms := s.tr.SetReady(now); ms != nil {
			s.ready = true
			s.emit(phases.KindLoadMilestone, *ms)
			s.emit(phases.KindLoadServer, phases.ServerEvent{Action: "ready",
				Detail: fmt.Sprintf("GET %s answered 200 after %s", remote.MaskURL(s.w.cfg.HealthURL), units.Duration(ms.AtS))})
			s.phaseFinish("")
		}
	case s.ready && (p.health.err != nil || p.health.status != 0):
		// It was serving and no longer answers.
		s.ready = false
		s.tr.ready = false
		detail := fmt.Sprintf("GET %s: status %d", s.w.cfg.HealthURL, p.health.status)
		if p.health.err != nil {
			detail = fmt.Sprintf("GET %s: %v", s.w.cfg.HealthURL, p.health.err)
		}
		detail = remote.MaskURL(detail)
		s.emit(phases.KindLoadServer, phases.ServerEvent{Action: "unhealthy", Detail: detail})
	}
	if s.tr.ready {
		s.phaseFinish("")
	} else {
		s.phaseStart()
	}
	s.emitState(now)
}

func (s *run) emitState(now time.Time) {
	s.w.loading.Store(!s.tr.ready && !s.tr.stopped && s.tr.failure == nil)
	s.emit(phases.KindLoadState, s.tr.State(now))
}

func (s *run) tick() {
	now := s.now()
	s.exitTick(now)
	if f := s.tr.Failure(); f != nil && !s.failAt.IsZero() && now.Sub(s.failAt) >= failGrace {
		s.phaseFinish(FailureText(f))
	}
	if st := s.tr.CheckStall(now); st != nil {
		st.Node = s.w.cfg.Node
		s.stalled = true
		s.stallFrom = now.Add(-time.Duration(st.ForS * float64(time.Second)))
		s.emit(phases.KindLoadStall, *st)
		if !s.until {
			s.diagnoseAsync("stall")
		}
	} else if s.tr.stall == nil && s.stalled {
		s.stalled = false
		if !s.tr.stopped && s.tr.failure == nil {
			// Progress came back: the story needs the stall's real length.
			s.emit(phases.KindLoadMilestone, phases.Milestone{Stage: "stall_resumed", AtS: now.Sub(s.tr.start).Seconds(),
				Value: "progress again after " + units.Duration(now.Sub(s.stallFrom).Seconds()), Line: s.tr.lastLine, Load: s.tr.gen})
		}
	}
}

// ending says whether Until should stop.
func (s *run) ending() (Ending, bool) {
	switch {
	case s.tr.Ready():
		return Ending{Kind: EndReady, Reason: "GET " + remote.MaskURL(s.w.cfg.HealthURL) + " answered 200"}, true
	case s.tr.Failure() != nil && !s.failAt.IsZero() && s.now().Sub(s.failAt) >= failGrace:
		return Ending{Kind: EndFailed, Reason: FailureText(s.tr.Failure())}, true
	case s.stalled && s.tr.stall != nil:
		st := *s.tr.stall
		st.Node = s.w.cfg.Node
		return Ending{Kind: EndStalled, Reason: StallText(&st)}, true
	}
	return Ending{}, false
}

func toPhaseGPUs(gs []smi.GPU) []phases.GPU {
	out := make([]phases.GPU, len(gs))
	for i, g := range gs {
		out[i] = phases.GPU{Index: g.Index, Name: g.Name, MemoryUsedMiB: g.MemoryUsedMiB,
			MemoryTotalMiB: g.MemoryTotalMiB, UtilizationPct: g.UtilizationPct, PowerW: g.PowerW}
	}
	return out
}

// snapStepMiB is how far a GPU's memory moves before the timeline takes a
// snapshot sooner than SnapshotEvery: a load's growth is drawn in steps
// of 2 GiB at most, however fast it loads.
const snapStepMiB = 2048

// movedSince reports whether a GPU's memory moved by snapStepMiB or more
// since the last snapshot (or the GPUs changed).
func movedSince(last, now []phases.GPU) bool {
	if len(last) != len(now) {
		return true
	}
	for i, g := range now {
		a, b := last[i].MemoryUsedMiB, g.MemoryUsedMiB
		if (a == nil) != (b == nil) || a != nil && math.Abs(*a-*b) >= snapStepMiB {
			return true
		}
	}
	return false
}
