package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/enginelog"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/remote"
)

// Config configures a Watcher. The watcher fills in no default: every
// value it needs is given (Validate says which is missing); the campaign
// (package campaign) is where the defaults live.
type Config struct {
	Host       remote.Host
	LogPath    string        // the server's log on the host
	HealthURL  string        // e.g. http://127.0.0.1:8000/health, as seen from the host; "": none (a worker node)
	ExpectGiB  float64       // expected weights per GPU; 0: from the log, else the plateau
	StallAfter time.Duration // least silence that is a stall
	Poll       time.Duration // nvidia-smi and /health period
	// SnapshotEvery is how often a journalled GPU snapshot is emitted.
	SnapshotEvery time.Duration
	Now           func() time.Time // the clock; nil: time.Now
	// PIDFile on the host holds the launch's pid (its process group), and
	// Container names the server's docker container: a stall diagnosis
	// samples their processes (and those nvidia-smi lists on the GPUs).
	PIDFile   string
	Container string
	// NoDiagnosis leaves stalls undiagnosed (no commands beyond the log,
	// nvidia-smi and /health are run on the host).
	NoDiagnosis bool
	// DiagnoseWindow is the diagnosis's sampling window (needed unless
	// NoDiagnosis).
	DiagnoseWindow time.Duration
	// Node names the host as one node of several (Group sets it): losing
	// its nvidia-smi is then "node X lost", and its coming back said too.
	Node string
	// Engine is the server whose log this is: "auto" or "" (told from
	// the log), "vllm" or "sglang".
	Engine string
}

// Watcher follows one server's load: its log (from the start of the file),
// nvidia-smi once per Poll, and GET /health through the host. It emits
// KindLoadGPU (each poll, ephemeral), KindLoadGPUCoarse (journalled, every
// SnapshotEvery), KindLoadState (each poll), KindLoadMilestone, KindLoadStall,
// KindLoadFailure, KindLoadLog (relevant lines) and KindLoadServer (ready).
type Watcher struct {
	cfg     Config
	control chan control
	client  *http.Client
	// loading is set by the loop while the load is under way (not ready,
	// stopped or failed): only then is the launch's process group looked at.
	loading atomic.Bool
}

// Validate checks that cfg is complete, before the watcher runs; the
// error names the field.
func (cfg Config) Validate() error {
	switch {
	case cfg.Host == nil:
		return errors.New("Host: no host to watch")
	case strings.TrimSpace(cfg.LogPath) == "":
		return errors.New("LogPath: not set: the server's log on the host")
	case cfg.StallAfter <= 0:
		return fmt.Errorf("StallAfter %s: want the least silence that is a stall, more than 0", cfg.StallAfter)
	case cfg.Poll <= 0:
		return fmt.Errorf("Poll %s: want the nvidia-smi and /health period, more than 0", cfg.Poll)
	case cfg.SnapshotEvery <= 0:
		return fmt.Errorf("SnapshotEvery %s: want the journalled GPU snapshots' period, more than 0", cfg.SnapshotEvery)
	case !cfg.NoDiagnosis && cfg.DiagnoseWindow <= 0:
		return fmt.Errorf("DiagnoseWindow %s: want a stall diagnosis's sampling window, more than 0", cfg.DiagnoseWindow)
	}
	return nil
}

// NewWatcher builds a watcher; Run starts it (and refuses a configuration
// that Validate refuses).
func NewWatcher(cfg Config) *Watcher {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &Watcher{cfg: cfg, control: make(chan control, 8)}
	w.loading.Store(true)
	h := cfg.Host
	w.client = &http.Client{
		Timeout: 3 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return h.DialContext(ctx, network, addr)
			},
			DisableKeepAlives: true,
		},
	}
	return w
}

// Ending is how a load ended for Until.
type Ending struct {
	Kind   string // "ready", "failed", "stalled"
	Reason string
	// Diagnosis says why a stalled load stopped (nil otherwise, or when
	// it could not be taken).
	Diagnosis *phases.Diagnosis
}

// Ending kinds.
const (
	EndReady   = "ready"
	EndFailed  = "failed"
	EndStalled = "stalled"
)

// Run follows the load until ctx ends (the cockpit's way); it returns nil
// then, or an error when the watcher cannot run at all.
func (w *Watcher) Run(ctx context.Context, em *phases.Emitter) error {
	_, err := w.loop(ctx, em, false)
	if ctxEnded(err) {
		return nil
	}
	return err
}

// ctxEnded reports whether err only says the context ended.
func ctxEnded(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Until follows the load until it is ready, failed or stalled (the headless
// command's way).
func (w *Watcher) Until(ctx context.Context, em *phases.Emitter) (Ending, error) {
	return w.loop(ctx, em, true)
}

// MarkStopped tells the watcher the server was stopped on purpose (no stall
// is reported while stopped).
func (w *Watcher) MarkStopped() { w.send(ctlStopped) }

// MarkStarted tells the watcher a new server start began: a new load.
func (w *Watcher) MarkStarted() { w.send(ctlStarted) }

type control int

const (
	ctlStopped control = iota
	ctlStarted
	ctlDiagnose
	ctlReady
)

// MarkReady tells a node's watcher that the deployment serves (its head
// answered /health), for nodes without an API server of their own.
func (w *Watcher) MarkReady() { w.send(ctlReady) }

// Diagnose asks for a diagnosis of the server now (the Load pane's key): it
// is emitted as KindLoadDiagnosis when taken.
func (w *Watcher) Diagnose() { w.send(ctlDiagnose) }

func (w *Watcher) send(c control) {
	select {
	case w.control <- c:
	default:
	}
}

type healthResult struct {
	ok     bool
	status int
	err    error
}

type pollResult struct {
	at     time.Time
	gpus   []smi.GPU
	err    error
	health healthResult
	proc   procState
}

func (w *Watcher) loop(ctx context.Context, em *phases.Emitter, until bool) (Ending, error) {
	if err := w.cfg.Validate(); err != nil {
		return Ending{}, &phases.InputError{Err: fmt.Errorf("load: %w", err)}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan remote.FollowEvent, 256)
	polls := make(chan pollResult, 4)
	notes := make(chan string, 8)
	go w.follow(ctx, lines, notes)
	go w.poll(ctx, polls)

	now := w.cfg.Now()
	s := &run{w: w, em: em, ctx: ctx, tr: NewTracker(w.cfg.Host.Name(), w.cfg.ExpectGiB, w.cfg.StallAfter, now),
		parser: enginelog.New(w.cfg.Engine), lastSnap: time.Time{}, until: until}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return Ending{}, ctx.Err()
		case f := <-w.control:
			s.control(f)
		case n := <-notes:
			s.logLine(-1, "NOTE", n)
		case ev := <-lines:
			s.line(ev)
		case p := <-polls:
			s.poll(p)
		case <-tick.C:
			s.tick()
		}
		if until {
			if end, ok := s.ending(); ok {
				if end.Kind == EndStalled {
					end.Diagnosis = s.diagnoseNow("stall")
				}
				if end.Kind == EndReady {
					s.phaseFinish("")
				} else {
					s.phaseFinish(end.Kind + ": " + end.Reason)
				}
				return end, nil
			}
		}
	}
}

// follow tails the log, retrying when following fails.
func (w *Watcher) follow(ctx context.Context, lines chan<- remote.FollowEvent, notes chan<- string) {
	var offset int64
	lastErr := ""
	for ctx.Err() == nil {
		err := w.cfg.Host.Follow(ctx, w.cfg.LogPath, offset, func(ev remote.FollowEvent) {
			if ev.Offset > 0 || ev.Reset {
				offset = ev.Offset
			}
			select {
			case lines <- ev:
			case <-ctx.Done():
			}
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil && err.Error() != lastErr {
			lastErr = err.Error()
			select {
			case notes <- fmt.Sprintf("following %s: %v (retrying)", w.cfg.LogPath, err):
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return
		}
	}
}

// poll runs nvidia-smi and GET /health once per Poll.
func (w *Watcher) poll(ctx context.Context, out chan<- pollResult) {
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		p := pollResult{}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		text, err := remote.Output(sctx, w.cfg.Host, smi.QueryCommand)
		cancel()
		p.at = w.cfg.Now()
		if err != nil {
			p.err = err
		} else {
			p.gpus = smi.ParseQuery(text)
			if len(p.gpus) == 0 && strings.TrimSpace(text) != "" {
				p.err = fmt.Errorf("nvidia-smi printed nothing readable: %q", firstLine(text))
			}
		}
		p.health = w.health(ctx)
		p.proc = w.procCheck(ctx)
		select {
		case out <- p:
		case <-ctx.Done():
			return
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// health asks GET HealthURL through the host.
func (w *Watcher) health(ctx context.Context) healthResult {
	if w.cfg.HealthURL == "" {
		return healthResult{}
	}
	u, err := url.Parse(w.cfg.HealthURL)
	if err != nil {
		return healthResult{err: errors.New(remote.MaskURL(fmt.Sprintf("health URL %q: %v", w.cfg.HealthURL, err)))}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return healthResult{err: err}
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return healthResult{err: err}
	}
	resp.Body.Close()
	return healthResult{ok: resp.StatusCode == http.StatusOK, status: resp.StatusCode}
}

// HealthURL turns a server URL ("http://127.0.0.1:8000" or ".../v1") into
// its /health address.
func HealthURL(serverURL string) string {
	if serverURL == "" {
		return ""
	}
	u, err := url.Parse(serverURL)
	if err != nil || u.Host == "" {
		return strings.TrimRight(serverURL, "/") + "/health"
	}
	u.Path, u.RawQuery = "/health", ""
	return u.String()
}
