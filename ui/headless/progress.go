package headless

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/units"
)

// DefaultProgressEvery is how often a long command says where it stands
// when nothing else was printed: on a terminal, and in --jsonl.
const DefaultProgressEvery = 5 * time.Second

// tracker follows a long command's events and says where it stands: the
// run's step, the phase, the sweep's level, what is done of what is
// planned and how long is left at the pace so far.
type tracker struct {
	mu    sync.Mutex
	start time.Time
	phase string          // the latest phase started
	open  phases.Brackets // what is running
	// The campaign run's steps.
	steps     []string
	step      string
	stepIndex int
	// The sweep.
	levels    int
	levelN    int
	level     *phases.LevelStarted
	levelAt   time.Time
	tick      *phases.MacroTick
	levelDurs []float64
	// A GPU script (micro, nccl).
	prog   *phases.Progress
	progAt time.Time // when the phase started
	// The load.
	load *phases.LoadState
	// The profile capture's step.
	prof *phases.ProfileStep
}

func newTracker(now time.Time) *tracker { return &tracker{start: now} }

// observe folds one event into where the command stands.
func (t *tracker) observe(ev phases.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ch := t.open.Step(ev); ch.Opened && ch.Name != phases.RunBracket {
		t.phase, t.progAt, t.prog, t.load, t.level, t.tick, t.prof = ch.Name, ev.Time, nil, nil, nil, nil, nil
	}
	switch d := ev.Data.(type) {
	case phases.RunStarted:
		t.steps = d.Steps
	case phases.RunStep:
		if d.State == phases.StepStarted {
			t.step = d.Name
			for i, s := range t.steps {
				if s == d.Name {
					t.stepIndex = i + 1
				}
			}
		}
	case phases.PhaseStarted:
		if d.Name == phases.Macro {
			t.levels, t.levelN, t.levelDurs = plannedLevels(d.Params), 0, nil
		}
	case phases.LevelStarted:
		if d.Run <= 1 {
			t.levelN++
		}
		v := d
		t.level, t.levelAt, t.tick = &v, ev.Time, nil
	case phases.MacroTick:
		v := d
		t.tick = &v
	case phases.LevelResult:
		if t.level != nil {
			t.levelDurs = append(t.levelDurs, ev.Time.Sub(t.levelAt).Seconds())
		}
		t.level, t.tick = nil, nil
	case phases.Progress:
		v := d
		t.prog = &v
	case phases.ProfileStep:
		v := d
		t.prof = &v
		if t.phase == "" {
			t.phase = phases.Profile
		}
	case phases.LoadState:
		v := d
		t.load = &v
		if t.phase == "" {
			t.phase = phases.Load
		}
	}
}

// plannedLevels is how many levels the sweep's parameters list.
func plannedLevels(params any) int {
	m, ok := params.(map[string]any)
	if !ok {
		return 0
	}
	switch c := m["concurrency"].(type) {
	case []int:
		return len(c)
	case []any:
		return len(c)
	}
	return 0
}

// report is where the command stands at now.
func (t *tracker) report(now time.Time) phases.CommandProgress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := phases.CommandProgress{Phase: t.phase, Step: t.step, StepIndex: t.stepIndex, Steps: len(t.steps),
		ElapsedS: now.Sub(t.start).Seconds()}
	var parts []string
	if t.step != "" {
		parts = append(parts, fmt.Sprintf("step %s (%d of %d)", t.step, t.stepIndex, len(t.steps)))
	}
	switch {
	case t.level != nil:
		parts = append(parts, t.levelPart(now, &p))
	case t.prog != nil && t.prog.Total > 0:
		parts = append(parts, t.scriptPart(now, &p))
	case t.prof != nil && t.phase == phases.Profile:
		parts = append(parts, fmt.Sprintf("profile %s %s (%s)", t.prof.Step, t.prof.Detail, units.Compact(t.prof.ElapsedS)))
	case t.load != nil && t.phase == phases.Load:
		p.ETAS = loadETA(*t.load)
		parts = append(parts, "load "+load.StatusLine(*t.load))
	case t.open.Open(t.phase):
		parts = append(parts, t.phase+" running")
	}
	parts = append(parts, units.Compact(p.ElapsedS)+" in")
	p.Text = strings.Join(parts, " · ")
	return p
}

// levelPart is the sweep's level: requests done of planned, the level's
// time left and the sweep's.
func (t *tracker) levelPart(now time.Time, p *phases.CommandProgress) string {
	lv := t.level
	p.Level = phases.LevelName(lv.Concurrency, lv.Rate)
	p.LevelIndex, p.Levels, p.Planned, p.Unit = t.levelN, t.levels, lv.Requests, "requests"
	s := p.Level
	if t.levels > 0 {
		s += fmt.Sprintf(" (%d of %d)", t.levelN, t.levels)
	}
	elapsed := now.Sub(t.levelAt).Seconds()
	if tk := t.tick; tk != nil {
		p.Done = tk.Completed
		if f := tk.LevelProgress; f > 0.02 && f < 1 {
			p.ETAS = tk.LevelElapsedS * (1 - f) / f
		}
	}
	if p.Planned > 0 {
		s += fmt.Sprintf(": %d of %d requests", p.Done, p.Planned)
	} else {
		s += fmt.Sprintf(": %d requests", p.Done)
	}
	if lv.DurationS > 0 {
		s += fmt.Sprintf(", %s of %s", units.Compact(elapsed), units.Compact(lv.DurationS))
	}
	if p.ETAS > 0 {
		s += ", ETA " + units.Compact(p.ETAS)
		// The levels to come at the pace of the last two finished (the
		// nearest in concurrency); before two, only how many are left.
		rest := t.levels - t.levelN
		switch n := len(t.levelDurs); {
		case rest > 0 && n >= 2:
			p.PhaseETAS = p.ETAS + float64(rest)*mean(t.levelDurs[n-2:])
			s += ", sweep ~" + units.Compact(p.PhaseETAS)
		case rest > 0:
			s += fmt.Sprintf(", then %d level(s)", rest)
		}
	}
	return s
}

// scriptPart is a GPU script's progress: items done of planned, and the
// time left at the pace so far.
func (t *tracker) scriptPart(now time.Time, p *phases.CommandProgress) string {
	pr := t.prog
	p.Done, p.Planned, p.Unit = pr.Done, pr.Total, "items"
	s := fmt.Sprintf("%s %d of %d", t.phase, pr.Done, pr.Total)
	if pr.Text != "" {
		s += " (" + pr.Text + ")"
	}
	if el := now.Sub(t.progAt).Seconds(); pr.Done > 0 && pr.Done < pr.Total {
		p.ETAS = el / float64(pr.Done) * float64(pr.Total-pr.Done)
		s += ", ETA " + units.Compact(p.ETAS)
	}
	return s
}

// loadETA is the load's time left: the slowest GPU's, else the shards'.
func loadETA(s phases.LoadState) float64 {
	eta := s.ShardETA
	for _, g := range s.GPUs {
		eta = max(eta, g.ETASeconds)
	}
	return eta
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// stampWriter is a writer that remembers when it was last written to, so
// progress is said only when the command has been quiet.
type stampWriter struct {
	w    io.Writer
	mu   sync.Mutex
	last atomic.Int64 // unix nanoseconds
}

func (s *stampWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last.Store(time.Now().UnixNano())
	return s.w.Write(b)
}

// quietFor is how long nothing was written.
func (s *stampWriter) quietFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, s.last.Load()))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// flagProgress registers --progress-every.
func (c *Command) flagProgress() {
	c.Flags.DurationVar(&c.progressEvery, "progress-every", 0,
		"say where the command stands after this long without output (default 5s on a terminal, else never; --jsonl gets a progress event every 5s either way)")
}

// startProgress says where the command stands until the returned stop is
// called: on stderr after every quiet progressEvery (5 s on a terminal;
// never elsewhere unless --progress-every), and as a progress event in
// --jsonl every 5 s (or --progress-every). Feed it the command's events
// with observe.
func (c *Command) startProgress(ctx context.Context) (observe func(phases.Event), stop func()) {
	t := newTracker(time.Now())
	every := c.progressEvery
	say := every > 0 || isTerminal(c.Stderr)
	if every <= 0 {
		every = DefaultProgressEvery
	}
	sw := &stampWriter{w: c.Stderr}
	sw.last.Store(time.Now().UnixNano())
	c.Stderr = sw
	jsonl := c.JSONL()
	if !say && jsonl == nil {
		return t.observe, func() { c.Stderr = sw.w }
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(min(every, time.Second))
		defer tk.Stop()
		lastEvent := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tk.C:
				if say && sw.quietFor(now) >= every {
					fmt.Fprintf(sw, "%s progress: %s\n", now.Format("15:04:05"), t.report(now).Text)
				}
				if jsonl != nil && now.Sub(lastEvent) >= every {
					lastEvent = now
					c.WriteLine(phases.New(now, phases.KindProgress, t.report(now)))
				}
			}
		}
	})
	return t.observe, func() { cancel(); wg.Wait(); c.Stderr = sw.w }
}
