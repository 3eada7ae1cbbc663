package macro

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// What the path may add before it is said aloud, and how many small
// requests time it.
const (
	pathAddsMax = 2 * time.Millisecond // a round trip above this is in every TTFT
	bunchedMax  = 1.2                  // token events per read above this: bunched
	pathProbes  = 10
)

// bunchedLead starts every warning about bunched streams.
const bunchedLead = "the streams arrived bunched"

// pathFix is what to do when the path bends the figures.
const pathFix = "--loadgen host (campaign: macro.loadgen: host) runs the load on the GPU host and measures without it"

// newPath works out how the sweep's requests reach the server: cfg.Path
// when the caller knows (the load generator on the host), through SSH when
// the connections are the host's forwarded ones, else directly.
func newPath(cfg Config) *phases.MacroPath {
	p := &phases.MacroPath{Kind: phases.PathDirect, Levels: []phases.PathLevel{}}
	if cfg.Path != "" {
		p.Kind = cfg.Path
	}
	if f, ok := cfg.Host.(remote.Forwarder); ok && cfg.Dial != nil && cfg.Path == "" {
		via, nodelay, err := f.Forwarding()
		p.Kind, p.Via, p.Nodelay = phases.PathSSH, via, nodelay
		if err != nil {
			p.NodelayNote = oneLine(err.Error())
		}
	}
	return p
}

// measurePath times pathProbes small requests over the sweep's own
// connections, after one untimed that opens a connection: GET /health, or
// GET /v1/models on a server without it. Nothing is timed when neither
// answers.
func (c *client) measurePath(ctx context.Context, p *phases.MacroPath) {
	path := "/health"
	if c.get(ctx, path) != nil {
		path = "/v1/models"
		if c.get(ctx, path) != nil {
			return
		}
	}
	var rtts []float64
	for range pathProbes {
		t := time.Now()
		if c.get(ctx, path) != nil {
			break
		}
		rtts = append(rtts, ms(time.Since(t)))
	}
	if len(rtts) == 0 {
		return
	}
	slices.Sort(rtts)
	p.Probe, p.Probes = "GET "+path, len(rtts)
	p.RTTp50ms = rtts[(len(rtts)-1)/2]
	p.RTTp99ms = rtts[min(len(rtts)-1, (99*len(rtts)+99)/100-1)]
}

// get sends one GET and reads its answer; an error unless it is a 200.
func (c *client) get(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.URL+path, nil)
	if err != nil {
		return err
	}
	c.header(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// pathWarnings are what the path does to every figure, known before the
// first level: a round trip over 2 ms, an SSH server that holds small
// writes.
func pathWarnings(p *phases.MacroPath) []string {
	var w []string
	if p.Kind == phases.PathSSH && p.Nodelay == "none" {
		w = append(w, fmt.Sprintf("the SSH server of %s could not be made to send each write at once (%s): it holds small writes "+
			"while earlier ones are unacknowledged (Nagle), so tokens may arrive in bunches, ITL reading low and TTFT high; "+
			"allow a command on the connection, or use %s", p.Via, p.NodelayNote, pathFix))
	}
	if p.Kind != phases.PathHost && p.Probes > 0 && p.RTTp50ms > ms(pathAddsMax) {
		w = append(w, fmt.Sprintf("the path to the server (%s) adds %.1f ms to every request (%s round trip p50 %.1f ms, p99 %.1f ms): "+
			"every TTFT and E2EL includes it; %s", pathName(p), p.RTTp50ms, p.Probe, p.RTTp50ms, p.RTTp99ms, pathFix))
	}
	return w
}

// bunchWarning is a level's warning when its streams arrived bunched.
func bunchWarning(p *phases.MacroPath, perRead float64) *warning {
	if p == nil || perRead <= bunchedMax {
		return nil
	}
	return &warning{warnBunched, bunchText(p, fmt.Sprintf("%.2f", perRead))}
}

// bunchText says the streams arrived bunched (figure token events per
// read), what that does to the figures, and who held them back.
func bunchText(p *phases.MacroPath, figure string) string {
	who := "the network or this client held them back; " + pathFix
	switch p.Kind {
	case phases.PathSSH:
		who = "the SSH path (" + p.Via + ") or this client held them back; " + pathFix
	case phases.PathHost:
		who = "on the GPU host itself: the server wrote them so, or this client fell behind"
	}
	return fmt.Sprintf("%s (%s token events per read, about 1 expected), so ITL reads low and TTFT high: %s", bunchedLead, figure, who)
}

// finishPath adds each level's events per read to p and, when some level
// arrived bunched, a warning naming the levels.
func finishPath(p *phases.MacroPath, levels []phases.LevelResult) {
	for _, l := range levels {
		p.Levels = append(p.Levels, phases.PathLevel{Concurrency: l.Concurrency, Rate: l.Rate, EventsPerRead: l.EventsPerRead})
	}
	if w := BunchedSummary(p, levels); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
}

// BunchedSummary is one warning naming the levels whose streams arrived
// bunched, or "" when none did.
func BunchedSummary(p *phases.MacroPath, levels []phases.LevelResult) string {
	var bunched []string
	worst := 0.0
	for _, l := range levels {
		if l.EventsPerRead > bunchedMax {
			bunched = append(bunched, levelName(l))
			worst = max(worst, l.EventsPerRead)
		}
	}
	if len(bunched) == 0 {
		return ""
	}
	return strings.Join(bunched, ", ") + ": " + bunchText(p, fmt.Sprintf("up to %.2f", worst))
}

// IsPathWarning reports whether a warning is about the path (said on its
// own line by the front-ends).
func IsPathWarning(text string) bool {
	return strings.Contains(text, pathFix) || strings.Contains(text, bunchedLead)
}

func levelName(l phases.LevelResult) string { return phases.LevelName(l.Concurrency, l.Rate) }

// pathName is the path in a few words: "direct", "SSH via gpu1 (…)", "on
// the GPU host".
func pathName(p *phases.MacroPath) string {
	switch p.Kind {
	case phases.PathSSH:
		return "SSH via " + p.Via
	case phases.PathHost:
		return "on the GPU host"
	}
	return "direct"
}

// PathLine is the path in one line: how the load reached the server, its
// round trip and, given levels, how bunched they arrived.
func PathLine(p phases.MacroPath, levels []phases.LevelResult) string {
	s := "path: " + pathName(&p)
	switch {
	case p.Kind != phases.PathSSH || p.Nodelay == "":
	case p.Nodelay == "none":
		s += ", sends at once: no"
	default:
		s += ", sends at once: yes"
	}
	if p.Probes > 0 {
		s += fmt.Sprintf(" · round trip p50 %.2f ms, p99 %.2f ms (%s ×%d)", p.RTTp50ms, p.RTTp99ms, p.Probe, p.Probes)
	} else {
		s += " · round trip not measured (no /health or /v1/models answer)"
	}
	worst, at := 0.0, ""
	for _, l := range levels {
		if l.EventsPerRead > worst {
			worst, at = l.EventsPerRead, levelName(l)
		}
	}
	if worst > 0 {
		s += fmt.Sprintf(" · token events per read ≤ %.2f (%s)", worst, at)
	}
	return s
}

// ProbePath is the path a sweep with cfg would take to the server, its
// round trip timed as the sweep times it before its first level, and the
// warnings the sweep would give about it. Only the small GETs are sent.
func ProbePath(ctx context.Context, cfg Config) phases.MacroPath {
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	c := newClient(cfg, 1)
	defer c.close()
	p := newPath(cfg)
	c.measurePath(ctx, p)
	p.Warnings = pathWarnings(p)
	return *p
}
