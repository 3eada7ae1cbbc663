package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote"
)

// serverInfo is what the server answered, through the host.
type serverInfo struct {
	up       bool
	answered bool   // it answered GET /health, not 200 maybe
	health   string // why it is not up
	models   []string
	modelsOK string // "HTTP 200" or why not
	metrics  string
	tokenize string
	version  string
}

// probeServer asks the server's health, models, metrics, tokenize and
// version through the host, as the sweep reaches them.
func probeServer(ctx context.Context, cfg *Config) serverInfo {
	base := strings.TrimRight(cfg.Sweep.URL, "/")
	var si serverInfo
	if base == "" {
		si.health = "no server URL"
		return si
	}
	hc := client(cfg)
	defer hc.CloseIdleConnections()
	get := func(method, u, body string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		if k := cfg.Sweep.APIKey; k != "" {
			req.Header.Set("Authorization", "Bearer "+k)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, b, nil
	}
	status := func(code int, err error) string {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if err != nil {
			return oneLine(err.Error(), 120)
		}
		return "HTTP " + strconv.Itoa(code)
	}
	code, _, err := get(http.MethodGet, base+"/health", "")
	si.health, si.up, si.answered = status(code, err), err == nil && code == http.StatusOK, err == nil
	if err != nil {
		return si
	}
	code, b, err := get(http.MethodGet, base+"/v1/models", "")
	si.modelsOK = status(code, err)
	var ml struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err == nil && code == http.StatusOK && json.Unmarshal(b, &ml) == nil {
		for _, m := range ml.Data {
			si.models = append(si.models, m.ID)
		}
	}
	if cfg.MetricsURL != "" {
		code, _, err = get(http.MethodGet, cfg.MetricsURL, "")
		si.metrics = status(code, err)
	}
	model := cfg.Sweep.Model
	if model == "" && len(si.models) > 0 {
		model = si.models[0]
	}
	tb, _ := json.Marshal(map[string]string{"model": model, "prompt": "hello"})
	code, _, err = get(http.MethodPost, base+"/tokenize", string(tb))
	si.tokenize = status(code, err)
	var v struct {
		Version string `json:"version"`
	}
	if code, b, err = get(http.MethodGet, base+"/version", ""); err == nil && code == http.StatusOK && json.Unmarshal(b, &v) == nil {
		si.version = v.Version
	}
	return si
}

// client is an HTTP client that reaches the server as the sweep does.
func client(cfg *Config) *http.Client {
	dial := cfg.Sweep.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 5 * time.Second}
		dial = d.DialContext
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: dial, DisableCompression: true}}
}

// checkServer: the server answers health, models, metrics and tokenize;
// a server that is down is a warn when the campaign can start it.
func checkServer(_ context.Context, cfg *Config, s *shared) phases.DoctorCheck {
	si := s.server()
	u := remote.MaskURL(cfg.Sweep.URL)
	if !si.up && si.answered {
		return warn("answers but is not ready at "+u+" (GET /health: "+si.health+"): loading, or unwell",
			"none if it is loading: the serve step follows the load (profdeck load shows it)")
	}
	if !si.up {
		found := "not up at " + u + " (GET /health: " + si.health + ")"
		if strings.TrimSpace(cfg.Launch) != "" {
			return warn(found, "none needed: the serve step starts it with server.launch (the load takes its time)")
		}
		return fail(found, "start the server, or set server.launch in the campaign file")
	}
	parts := []string{"health 200"}
	var bad []string
	note := func(name, st, why string) {
		if st == "HTTP 200" {
			parts = append(parts, name+" 200")
			return
		}
		bad = append(bad, name+" "+st+" ("+why+")")
	}
	note("models", si.modelsOK, "the sweep needs --model")
	if len(si.models) > 0 {
		parts[len(parts)-1] += " [" + strings.Join(si.models[:min(3, len(si.models))], ", ") + "]"
	}
	if cfg.MetricsURL != "" {
		note("metrics", si.metrics, "no server-side figures")
	}
	note("tokenize", si.tokenize, "prompt lengths estimated")
	found := u + ": " + strings.Join(parts, ", ")
	if len(bad) > 0 {
		return warn(found+"; "+strings.Join(bad, "; "), "the sweep runs and says what it estimated; an engine with these endpoints measures more")
	}
	return ok("%s", found)
}

// checkEngine: the serving engine's version, from the server when it is
// up, else from python's packages on the host.
func checkEngine(_ context.Context, cfg *Config, s *shared) phases.DoctorCheck {
	if v := s.server().version; v != "" {
		return ok("vLLM %s (the server's /version)", v)
	}
	p, err := s.python()
	switch {
	case err == nil && p.VLLM != "":
		return ok("vLLM %s (installed for %s)", p.VLLM, strings.TrimSpace(cfg.Python))
	case err == nil && p.SGLang != "":
		return ok("SGLang %s (installed for %s)", p.SGLang, strings.TrimSpace(cfg.Python))
	case s.server().up:
		return ok("the server answers but not /version (not vLLM, or an old one)")
	}
	return warn("neither vLLM nor SGLang is installed for "+strings.TrimSpace(cfg.Python)+" and the server does not answer",
		"none if the launch command brings its own (a container); else install the engine, or set micro.python to the engine's python")
}

// launchPrograms are the programs a launch command runs, one per command
// of a list (a && b; c), past variable assignments and wrappers.
func launchPrograms(launch string) []string {
	var progs []string
	f := func(r rune) bool { return r == ';' || r == '&' || r == '|' || r == '\n' }
	for _, part := range strings.FieldsFunc(launch, f) {
		words := strings.Fields(part)
		for len(words) > 0 && (strings.Contains(words[0], "=") || wrapper[words[0]]) {
			words = words[1:]
		}
		if len(words) > 0 && !builtin[words[0]] {
			progs = append(progs, strings.Trim(words[0], `"'`))
		}
	}
	return progs
}

var wrapper = map[string]bool{"env": true, "nohup": true, "exec": true, "setsid": true, "time": true}
var builtin = map[string]bool{"cd": true, "export": true, "source": true, ".": true, "set": true, "ulimit": true}

// checkLaunch: the launch command's programs are found on the host.
func checkLaunch(ctx context.Context, cfg *Config, s *shared) phases.DoctorCheck {
	if strings.TrimSpace(cfg.Launch) == "" {
		return warn("no server.launch: profdeck cannot start the server, nor restart it with the profiler (no profile step)",
			"set server.launch to the command that starts the server")
	}
	progs := launchPrograms(cfg.Launch)
	var found, missing []string
	for _, p := range progs {
		out, err := run(ctx, cfg, "command -v "+remote.Quote(p))
		if err != nil || strings.TrimSpace(out) == "" {
			missing = append(missing, p)
			continue
		}
		found = append(found, strings.TrimSpace(out))
	}
	if len(missing) > 0 {
		found := fmt.Sprintf("%s not found on %s (the PATH of a non-interactive shell)", strings.Join(missing, ", "), cfg.Host.Name())
		fix := "give the full path in server.launch, or activate the environment in it (e.g. source /opt/venv/bin/activate && vllm serve …)"
		if !cfg.Need.Restart && s.server().up {
			// The server already serves and nothing restarts it: the
			// launch is not run this time.
			return warn(found+"; not needed now: the server already serves and no step restarts it", fix)
		}
		return fail(found, fix)
	}
	return ok("%s", strings.Join(found, ", "))
}

// checkProfiler: the profiler's directory ({uid} resolved) is a private
// folder of the user's that can be written, with room for the traces.
func checkProfiler(ctx context.Context, cfg *Config, _ *shared) phases.DoctorCheck {
	dir := strings.TrimRight(cfg.ProfilerDir, "/")
	if dir == "" {
		return fail("no profiler directory", "set server.profiler_dir")
	}
	dir, bad := profilerFolder(ctx, cfg, dir)
	if bad != nil {
		return *bad
	}
	probe := dir + "/.profdeck-doctor"
	if err := cfg.Host.WriteFile(ctx, probe, []byte("profdeck doctor\n"), 0o644); err != nil {
		return fail(dir+" cannot be written: "+oneLine(err.Error(), 120), "set server.profiler_dir to a directory the SSH account can write")
	}
	_, _ = run(ctx, cfg, "rm -f "+remote.Quote(probe))
	out, err := run(ctx, cfg, "df -Pk "+remote.Quote(dir))
	if err != nil {
		return warn(dir+" writable; free space unknown (df: "+oneLine(err.Error(), 80)+")", "check the space for the traces by hand")
	}
	freeGiB, perr := parseDF(out)
	if perr != nil {
		return warn(dir+" writable; free space unknown ("+perr.Error()+")", "check the space for the traces by hand")
	}
	want := cfg.TraceGiB
	found := fmt.Sprintf("%s writable, %.1f GiB free", dir, freeGiB)
	switch {
	case freeGiB < want/10:
		return fail(found, fmt.Sprintf("free space, or point server.profiler_dir at a disk with %.0f GiB free", want))
	case freeGiB < want:
		return warn(found+fmt.Sprintf(" (traces of a few steps on every GPU can take %.0f GiB)", want), "free space, or point server.profiler_dir at a larger disk")
	}
	return ok("%s", found)
}

// profilerFolder is dir with {uid} resolved, made a private folder of the
// user's (see remote.PrivateDir) unless the server runs in a container
// (which writes inside it); a folder that fails is a failed check in one
// line naming it, with the fix.
func profilerFolder(ctx context.Context, cfg *Config, dir string) (string, *phases.DoctorCheck) {
	got, err := remote.ResolveUID(ctx, cfg.Host, dir)
	if err == nil && !cfg.Container {
		got, err = remote.PrivateDir(ctx, cfg.Host, dir, "server.profiler_dir")
	}
	var pe *remote.PathError
	switch {
	case errors.As(err, &pe):
		line := strings.TrimPrefix(pe.Line, remote.RefusedPrefix)
		i := strings.LastIndex(line, ": ")
		c := fail(line[:max(i, 0)], line[i+2:])
		return "", &c
	case err != nil:
		c := fail(dir+" cannot be made a folder of yours: "+oneLine(err.Error(), 120), "set server.profiler_dir to a directory the SSH account can write")
		return "", &c
	}
	return got, nil
}

// parseDF reads the available space off `df -Pk`'s last line, in GiB.
func parseDF(out string) (float64, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 6 {
		return 0, fmt.Errorf("unreadable df line %q", oneLine(lines[len(lines)-1], 80))
	}
	kb, err := strconv.ParseFloat(f[3], 64)
	if err != nil {
		return 0, fmt.Errorf("unreadable df line %q", oneLine(lines[len(lines)-1], 80))
	}
	return kb / (1 << 20), nil
}

// checkPath: how the load reaches the server, its round trip and whether
// the SSH server sends each write at once (the sweep's own measure).
func checkPath(ctx context.Context, cfg *Config, s *shared) phases.DoctorCheck {
	if cfg.Loadgen == "host" {
		return ok("the load runs on the GPU host (loadgen host): no path from here in the figures")
	}
	p := macro.ProbePath(ctx, cfg.Sweep)
	found := strings.TrimPrefix(macro.PathLine(p, nil), "path: ")
	if len(p.Warnings) == 0 {
		return ok("%s", found)
	}
	why, fix := splitFix(p.Warnings[0])
	return warn(found+": "+why, fix)
}

// splitFix cuts a path warning into what it found and its fix (after the
// last "; ").
func splitFix(w string) (string, string) {
	if i := strings.LastIndex(w, "; "); i >= 0 {
		return w[:i], w[i+2:]
	}
	return w, "--loadgen host (campaign: macro.loadgen: host)"
}
