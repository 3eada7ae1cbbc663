package onhost

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/hdrsec"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/selfbin"
)

// Options say where the load generator runs and what it is given.
type Options struct {
	// Host is the GPU host. A simulated host runs the agent in this
	// process (it cannot start programs); any other gets a copy of Exe.
	Host remote.Host
	// Exe is the program copied to the host (default: this program).
	Exe string
	// MetricsURL is the server's /metrics as the host sees it ("": none).
	MetricsURL string
	// Grace is how long a cancelled agent has to send what it measured
	// before its process group is killed (default 2 s, within the 3 s the
	// cockpit waits for running phases when it quits).
	Grace time.Duration
	// AwaitStart has the agent wait, once ready, for Start before its
	// sweep; OnReady is called when it is ready, OnStarted with the
	// host's clock at the moment it started.
	AwaitStart bool
	OnReady    func()
	// OnBatch, when set, has the agent send its finished requests as
	// histograms and counts, each batch passed here as it comes.
	OnBatch   func(hdrsec.Batch)
	OnStarted func(host time.Time)
}

// Sweep is a macro sweep whose load generator runs on the GPU host. It is
// a macro.Engine: run and steer it as a *macro.Sweep.
type Sweep struct {
	cfg    macro.Config
	opt    Options
	params map[string]any

	mu      sync.Mutex
	queue   []down
	wake    chan struct{}
	paused  bool
	target  int // the level's in-flight target, as last asked or reported
	install *selfbin.Install
}

var _ macro.Engine = (*Sweep)(nil)

// New checks cfg as macro.NewSweep does (bad input is found here, before
// anything reaches the host) and prepares the sweep.
func New(cfg macro.Config, opt Options) (*Sweep, error) {
	if opt.Host == nil {
		return nil, errors.New("--loadgen host: no host")
	}
	sw, err := macro.NewSweep(cfg)
	if err != nil {
		return nil, err
	}
	p := maps.Clone(sw.Params())
	p["loadgen"], p["loadgen_host"] = "host", opt.Host.Name()
	if opt.Grace <= 0 {
		opt.Grace = 2 * time.Second
	}
	return &Sweep{cfg: sw.Config(), opt: opt, params: p, wake: make(chan struct{}, 1)}, nil
}

// Config is the sweep's configuration with its defaults filled in.
func (s *Sweep) Config() macro.Config { return s.cfg }

// Install is how the program got to the host (nil before Run got there,
// and on a simulated host).
func (s *Sweep) Install() *selfbin.Install {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.install
}

// Start starts an agent that awaits its start (Options.AwaitStart) when
// the host's clock reads at.
func (s *Sweep) Start(at time.Time) { s.send(down{Op: opStart, At: at.UnixNano()}) }

func (s *Sweep) send(d down) {
	s.mu.Lock()
	s.queue = append(s.queue, d)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Pause stops sending new requests on the host; those in flight finish.
func (s *Sweep) Pause() { s.setPaused(true); s.send(down{Op: opPause}) }

// Resume sends again after Pause.
func (s *Sweep) Resume() { s.setPaused(false); s.send(down{Op: opResume}) }

func (s *Sweep) setPaused(p bool) { s.mu.Lock(); s.paused = p; s.mu.Unlock() }

// Paused reports whether the sweep was last asked to pause.
func (s *Sweep) Paused() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.paused }

// SetConcurrency changes the current level's in-flight target on the host.
func (s *Sweep) SetConcurrency(n int) {
	n = max(n, 1)
	s.setTarget(n)
	s.send(down{Op: opConc, N: n})
}

func (s *Sweep) setTarget(n int) { s.mu.Lock(); s.target = n; s.mu.Unlock() }

// Concurrency is the current level's in-flight target: as last set here,
// or as the host last reported it (0 before the first level, and in rate
// mode).
func (s *Sweep) Concurrency() int { s.mu.Lock(); defer s.mu.Unlock(); return s.target }

// Stop ends the sweep gracefully, as macro.Sweep.Stop does.
func (s *Sweep) Stop() { s.send(down{Op: opStop}) }

// Run runs the sweep on the host, emitting its events on em as the engine
// run here would, and returns what it measured. Cancelling ctx, or losing
// the connection, stops the sweep on the host; the levels measured so far
// are returned with the error.
func (s *Sweep) Run(ctx context.Context, em *phases.Emitter) (res *macro.Result, err error) {
	err = phases.Run(ctx, em, phases.Macro, s.params, func(ctx context.Context) error {
		res, err = s.run(ctx, em)
		if res != nil && res.Deployment == nil {
			res.Deployment = s.cfg.Deployment // the spec carries it; kept here when the host's result lacks it
		}
		return err
	})
	return res, err
}

// prepare gets the agent ready on the host (see ready), with the dataset
// copied there too.
func (s *Sweep) prepare(ctx context.Context, spec *Spec) (starter, error) {
	h := s.opt.Host
	start, in, err := ready(ctx, s.opt)
	if err != nil || in == nil {
		return start, err
	}
	s.mu.Lock()
	s.install = in
	s.mu.Unlock()
	s.logf("load generator on host %s: %s", h.Name(), installText(in))
	if spec.DatasetFile != "" {
		if spec.DatasetFile, err = selfbin.EnsureFile(ctx, h, in, spec.DatasetFile); err != nil {
			return nil, err
		}
	}
	return start, nil
}

// stampPath adds to the host's path record where the load generator ran
// and what putting it there took.
func (s *Sweep) stampPath(p *phases.MacroPath) {
	p.Host = s.opt.Host.Name()
	if in := s.Install(); in != nil {
		p.Copied, p.CopyS = in.Copied, in.Took.Seconds()
	}
}

func (s *Sweep) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log(fmt.Sprintf(format, args...))
	}
}

// Where the load generator runs: the values of --loadgen and
// macro.loadgen.
const (
	Here   = "here" // this machine; the load reaches the server through the host connection
	OnHost = "host" // the GPU host itself
)

// CheckMode says what is wrong with a --loadgen value ("" is Here).
func CheckMode(mode string) error {
	switch mode {
	case "", Here, OnHost:
		return nil
	}
	return fmt.Errorf("--loadgen %q: want here or host", mode)
}

// NewEngine is the sweep of cfg with its load generator where mode says:
// here (a *macro.Sweep) or on opt.Host (a *Sweep).
func NewEngine(cfg macro.Config, mode string, opt Options) (macro.Engine, error) {
	if err := CheckMode(mode); err != nil {
		return nil, err
	}
	// Never a typed nil inside the interface.
	if mode == OnHost {
		s, err := New(cfg, opt)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := macro.NewSweep(cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}
