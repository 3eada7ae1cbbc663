// Package pyrun runs the GPU phases' embedded Python scripts on a host: it
// uploads a script under a content-addressed name, checks that the GPUs are
// free, runs the script with the campaign's command prefix (a plain python3,
// or `docker exec -i vllm python3` for a containerised server), streams its
// JSON lines back as they come, and stops it cleanly when cancelled.
package pyrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// Line is one JSON line a script printed: its "type" and the whole object.
type Line struct {
	Type string
	Raw  json.RawMessage
}

// ParseLine reads one line of script output. ok is false for anything that
// is not a JSON object with a string "type" (log noise, warnings, a line
// cut short when the script died).
func ParseLine(text string) (Line, bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "{") || !strings.HasSuffix(text, "}") {
		return Line{}, false
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(text), &head); err != nil || head.Type == "" {
		return Line{}, false
	}
	return Line{Type: head.Type, Raw: json.RawMessage(text)}, true
}

// Decode unmarshals the line into v.
func (l Line) Decode(v any) error {
	if err := json.Unmarshal(l.Raw, v); err != nil {
		return fmt.Errorf("script line %q: %w", l.Type, err)
	}
	return nil
}

// ScriptName is the content-addressed file name of a script or data file:
// profdeck-<kind>-<first 12 hex digits of its SHA-256><ext>.
func ScriptName(kind string, data []byte, ext string) string {
	sum := sha256.Sum256(data)
	return "profdeck-" + kind + "-" + hex.EncodeToString(sum[:6]) + ext
}

// Upload writes data to dir on h under its content-addressed name and
// returns the path. dir must be given (the campaign holds its default);
// {uid} in it is the host user's uid. The folder is made private (0700)
// and checked (the user's, not a link, not writable by others: else bad
// input naming it and the fix), and the file is created anew, never
// through a link.
func Upload(ctx context.Context, h remote.Host, dir, kind string, data []byte, ext string) (string, error) {
	if strings.TrimSpace(dir) == "" {
		return "", errors.New("upload: no work dir on the host")
	}
	dir, err := remote.PrivateDir(ctx, h, dir, "--workdir")
	if err != nil {
		var pe *remote.PathError
		if errors.As(err, &pe) {
			return "", &phases.InputError{Err: err}
		}
		return "", fmt.Errorf("work dir on %s: %w", h.Name(), err)
	}
	p := path.Join(dir, ScriptName(kind, data, ext))
	if err := remote.Create(ctx, h, p, data, "600"); err != nil {
		return "", fmt.Errorf("upload %s to %s: %w", p, h.Name(), err)
	}
	return p, nil
}

// GPUProc is a process holding a GPU, as nvidia-smi lists it.
type GPUProc struct {
	PID     int
	Name    string
	UsedMiB int
}

// BusyError says the GPUs are in use (usually by the serving engine), so a
// benchmark would fail half-way or measure a shared GPU.
type BusyError struct{ Procs []GPUProc }

// Error names the processes holding the GPUs and how to go on.
func (e *BusyError) Error() string {
	var names []string
	mem := 0
	for _, p := range e.Procs {
		names = append(names, p.Name)
		mem += p.UsedMiB
	}
	uniq := dedupe(names)
	if len(uniq) > 3 {
		uniq = append(uniq[:3], "…")
	}
	return fmt.Sprintf("the GPUs are busy: %d process(es) hold %.1f GiB (%s); stop the server first (Load phase) or run anyway with --force",
		len(e.Procs), float64(mem)/1024, strings.Join(uniq, ", "))
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// SMIQuery is the nvidia-smi command CheckGPUs runs.
const SMIQuery = "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits"

// CheckGPUs asks nvidia-smi which processes hold a GPU. It returns a
// *BusyError when any does, nil when none does, and another error when
// nvidia-smi could not be asked (callers may go on: a container may lack it).
func CheckGPUs(ctx context.Context, h remote.Host) error {
	out, err := remote.Output(ctx, h, SMIQuery)
	if err != nil {
		return fmt.Errorf("nvidia-smi on %s: %w", h.Name(), err)
	}
	procs := ParseComputeApps(out)
	if len(procs) > 0 {
		return &BusyError{Procs: procs}
	}
	return nil
}

// ParseComputeApps reads nvidia-smi's --query-compute-apps CSV (no header,
// no units). Lines it cannot read are skipped.
func ParseComputeApps(out string) []GPUProc {
	var procs []GPUProc
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil {
			continue
		}
		mem, _ := strconv.Atoi(strings.TrimSpace(f[len(f)-1]))
		name := strings.TrimSpace(strings.Join(f[1:len(f)-1], ","))
		procs = append(procs, GPUProc{PID: pid, Name: name, UsedMiB: mem})
	}
	return procs
}

// Start is the first line every script prints: its process and parent ids,
// as seen in its own PID namespace (a container's, under docker exec).
type Start struct {
	PID  int `json:"pid"`
	PPID int `json:"ppid"`
}

// Fatal is the line a script prints when it dies.
type Fatal struct {
	Err   string `json:"error"`
	Trace string `json:"trace,omitempty"`
}

// Spec is one script run.
type Spec struct {
	Host remote.Host
	Cmd  string // the full command line
	// KillPrefix runs a Python one-liner in the script's PID namespace, to
	// stop it when the run is cancelled (e.g. "docker exec vllm python3").
	KillPrefix string
	// KillParent also stops the script's parent when it is a torch launcher.
	KillParent bool
	OnLine     func(Line)
	OnText     func(remote.Line) // output lines that are not script JSON
}

// Run runs the script and delivers its lines. When ctx ends it also stops
// the script inside a container, where ending the local command does not
// reach it, and returns ctx's error. A script that printed a fatal line
// returns that as its error.
func Run(ctx context.Context, s Spec) error {
	var (
		mu    sync.Mutex
		start Start
		fatal *Fatal
		tail  []string
	)
	err := s.Host.Run(ctx, s.Cmd, nil, func(l remote.Line) {
		if ln, ok := ParseLine(l.Text); ok && l.Stream == remote.Stdout {
			switch ln.Type {
			case "start":
				mu.Lock()
				_ = ln.Decode(&start)
				mu.Unlock()
			case "fatal":
				var f Fatal
				_ = ln.Decode(&f)
				mu.Lock()
				fatal = &f
				mu.Unlock()
			}
			if s.OnLine != nil {
				s.OnLine(ln)
			}
			return
		}
		if l.Stream == remote.Stderr && strings.TrimSpace(l.Text) != "" {
			mu.Lock()
			tail = append(tail, l.Text)
			if len(tail) > 8 {
				tail = tail[1:]
			}
			mu.Unlock()
		}
		if s.OnText != nil {
			s.OnText(l)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if ctx.Err() != nil {
		if start.PID > 0 && s.KillPrefix != "" {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_, _ = remote.Output(kctx, s.Host, KillCommand(s.KillPrefix, start, s.KillParent))
			cancel()
		}
		return fmt.Errorf("cancelled: %w", ctx.Err())
	}
	if fatal != nil {
		return fmt.Errorf("the script failed: %s", fatal.Err)
	}
	if err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) && strings.TrimSpace(ee.Stderr) == "" && len(tail) > 0 {
			ee.Stderr = strings.Join(tail, "\n")
		}
		return err
	}
	return nil
}

// KillCommand is the command that stops a started script: SIGTERM to its pid
// and, when parent is set and the parent is a torch launcher, to the parent
// (torchrun then stops every rank).
func KillCommand(prefix string, st Start, parent bool) string {
	withParent := "False"
	if parent && st.PPID > 1 {
		withParent = "True"
	}
	code := fmt.Sprintf(`import os,signal
ps=[%d]
try:
    if %s and b"torch" in open("/proc/%d/cmdline","rb").read(): ps.append(%d)
except Exception: pass
for p in ps:
    try: os.kill(p, signal.SIGTERM)
    except Exception: pass`, st.PID, withParent, st.PPID, st.PPID)
	return prefix + " -c " + remote.Quote(code)
}

// ExecPrefix turns a launcher prefix into one that runs python in the same
// place: its last word is replaced by python ("docker exec -i vllm torchrun"
// becomes "docker exec -i vllm python3").
func ExecPrefix(launcher, python string) string {
	f := strings.Fields(launcher)
	if len(f) <= 1 {
		return python
	}
	return strings.Join(f[:len(f)-1], " ") + " " + python
}
