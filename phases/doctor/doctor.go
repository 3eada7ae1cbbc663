// Package doctor checks, in seconds and before a load that may take half an
// hour, everything a campaign needs on its host: the host itself, the GPUs,
// python and torch for the GEMM timings, torchrun for the collectives, the
// serving engine, the launch command's program, the server when it is up,
// the profiler's directory and disk, and the path the load takes to the
// server. Each check is a small function giving one line: ok, warn or fail,
// what it found and, when it is not ok, the fix. The engine emits one
// phases.DoctorCheck per check, in a fixed order, inside its own run.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote"
)

// Need says which parts of the campaign will run, so that a check only
// fails for what is needed (a missing torchrun is a warning when no NCCL
// step runs).
type Need struct {
	Serve   bool // the server may have to be started (server.launch)
	Restart bool // the server is restarted with the profiler (server.launch again)
	Sweep   bool // the sweep (the server and the path to it)
	Micro   bool // the GEMM timings (python3, torch, CUDA)
	NCCL    bool // the collectives (torchrun)
	Profile bool // the profiler's restart and capture (its directory and disk)
}

// All is every part needed: a whole campaign.
var All = Need{Serve: true, Restart: true, Sweep: true, Micro: true, NCCL: true, Profile: true}

// Config is what to check, from the campaign.
type Config struct {
	Host remote.Host
	// Campaign says where the campaign came from ("profdeck.yaml: valid");
	// empty when none was read (the defaults).
	Campaign string
	GPUs     int    // GPUs the campaign uses on this host (its TP per node)
	Python   string // micro's python command prefix
	Torchrun string // nccl's torchrun command prefix
	Launch   string // server.launch (may be empty)
	// Sweep is the sweep's configuration through the host (URL, API key,
	// Dial, Host), for the server's endpoints and the path.
	Sweep       macro.Config
	MetricsURL  string
	Loadgen     string // "here" or "host"
	ProfilerDir string
	// Container: the server runs in a container (its profiler writes
	// inside it), so the profiler's folder on the host is not made.
	Container bool
	// TraceGiB is the free space the profiler's traces want.
	TraceGiB float64
	Need     Need
	// Timeout bounds each check.
	Timeout time.Duration
}

// Validate checks that cfg is complete; the error names the field. The
// doctor fills in no default: the campaign (package campaign) holds them.
func (cfg Config) Validate() error {
	switch {
	case cfg.Host == nil:
		return errors.New("Host: no host")
	case cfg.Timeout <= 0:
		return fmt.Errorf("Timeout %s: want the bound of each check, more than 0", cfg.Timeout)
	case cfg.TraceGiB <= 0:
		return fmt.Errorf("TraceGiB %g: want the free space the profiler's traces want, more than 0", cfg.TraceGiB)
	case strings.TrimSpace(cfg.Python) == "":
		return errors.New("Python: not set: micro's python command prefix")
	case strings.TrimSpace(cfg.Torchrun) == "":
		return errors.New("Torchrun: not set: nccl's torchrun command prefix")
	}
	return nil
}

// Result is every check, in order, and the time they took together.
type Result struct {
	Host    string               `json:"host"`
	Checks  []phases.DoctorCheck `json:"checks"`
	Fails   int                  `json:"fails"`
	Warns   int                  `json:"warns"`
	Seconds float64              `json:"seconds"`
}

// Failed names the checks that failed, joined for a message.
func (r *Result) Failed() string {
	var names []string
	for _, c := range r.Checks {
		if c.Status == phases.CheckFail {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}

// check is one check: it looks at the host through cfg and says what it
// found; need says whether a fail stops the campaign (else it is a warn).
type check struct {
	name string
	run  func(ctx context.Context, cfg *Config, s *shared) phases.DoctorCheck
	need func(Need) bool
}

// checks are run at the same time and reported in this order.
var checks = []check{
	{"host", checkHost, always},
	{"campaign", checkCampaign, always},
	{"gpus", checkGPUs, func(n Need) bool { return n.Micro || n.NCCL || n.Sweep }},
	{"python", checkPython, func(n Need) bool { return n.Micro }},
	{"torchrun", checkTorchrun, func(n Need) bool { return n.NCCL }},
	{"engine", checkEngine, func(n Need) bool { return n.Serve }},
	{"launch", checkLaunch, func(n Need) bool { return n.Serve }},
	{"server", checkServer, func(n Need) bool { return n.Sweep || n.Serve }},
	{"profiler", checkProfiler, func(n Need) bool { return n.Profile }},
	{"path", checkPath, func(n Need) bool { return n.Sweep }},
}

func always(Need) bool { return true }

// Names are the checks in their order.
func Names() []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.name
	}
	return out
}

// Run runs every check on cfg.Host and emits each as it is reported.
func Run(ctx context.Context, cfg Config, em *phases.Emitter) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, &phases.InputError{Err: fmt.Errorf("doctor: %w", err)}
	}
	res := &Result{Host: cfg.Host.Name()}
	params := map[string]any{"host": cfg.Host.Name(), "checks": Names()}
	err := phases.Run(ctx, em, phases.Doctor, params, func(ctx context.Context) error {
		start := time.Now()
		for _, c := range runAll(ctx, &cfg) {
			res.Checks = append(res.Checks, c)
			em.Emit(ctx, phases.KindDoctorCheck, c)
			switch c.Status {
			case phases.CheckFail:
				res.Fails++
			case phases.CheckWarn:
				res.Warns++
			}
		}
		res.Seconds = time.Since(start).Seconds()
		return ctx.Err()
	})
	return res, err
}

// runAll runs the checks at the same time, each within its timeout, and
// returns them in order. A fail of a part the campaign does not run is a
// warn that says so.
func runAll(ctx context.Context, cfg *Config) []phases.DoctorCheck {
	s := newShared(ctx, cfg)
	out := make([]phases.DoctorCheck, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			defer cancel()
			t := time.Now()
			r := c.run(cctx, cfg, s)
			if cctx.Err() != nil && ctx.Err() == nil && r.Status == phases.CheckOK {
				r = fail("did not answer within "+cfg.Timeout.String(), "see why the host is slow to answer")
			}
			r.Name, r.Ms = c.name, float64(time.Since(t).Microseconds())/1000
			r.Found, r.Fix = remote.ScrubSecrets(r.Found), remote.ScrubSecrets(r.Fix)
			if r.Status == phases.CheckFail && !c.need(cfg.Need) {
				r.Status, r.Found = phases.CheckWarn, r.Found+" (not needed: that part of the campaign does not run)"
			}
			out[i] = r
		})
	}
	wg.Wait()
	return out
}

func ok(format string, args ...any) phases.DoctorCheck {
	return phases.DoctorCheck{Status: phases.CheckOK, Found: fmt.Sprintf(format, args...)}
}

func warn(found, fix string) phases.DoctorCheck {
	return phases.DoctorCheck{Status: phases.CheckWarn, Found: found, Fix: fix}
}

func fail(found, fix string) phases.DoctorCheck {
	return phases.DoctorCheck{Status: phases.CheckFail, Found: found, Fix: fix}
}

// cmdErr is a command's failure in a few words: "not found" for status
// 127, else its status and the last line it printed on stderr.
func cmdErr(err error) string {
	var ee *remote.ExitError
	if !errors.As(err, &ee) {
		return oneLine(err.Error(), 160)
	}
	if ee.Status == 127 {
		return "not found"
	}
	lines := strings.Split(strings.TrimSpace(ee.Stderr), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return fmt.Sprintf("exit %d: %s", ee.Status, oneLine(last, 140))
	}
	return fmt.Sprintf("exit %d", ee.Status)
}

// oneLine is s on one line, at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}
