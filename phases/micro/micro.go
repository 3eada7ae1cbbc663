package micro

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/micro/pyrun"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote"
)

// Script is the Python program that times the GEMMs (see micro.py).
//
//go:embed micro.py
var Script []byte

// Config is one micro run.
type Config struct {
	Host    remote.Host
	Python  string // command prefix that runs Python on the host, e.g. "docker exec -i vllm python3"
	Plan    model.Plan
	WorkDir string // where the script is uploaded (default /tmp/profdeck)
	Force   bool   // run even when nvidia-smi shows the GPUs busy
	// Timing budget per GEMM in milliseconds (0: the script's 10 and 40).
	WarmupMs, RepMs float64
	NoCalib         bool // skip the 8192³ check against triton's do_bench
	// OnText receives output lines that are not results (warnings, stderr).
	OnText func(remote.Line)
	// OnRaw receives every JSON line the script printed, unparsed.
	OnRaw func(string)
}

// Command is the command line that runs the uploaded script with the
// uploaded plan. The Python prefix is shell text from the campaign; the
// script and plan reach it as arguments, so it needs no access to the work
// dir (a container does not see the host's /tmp).
func Command(cfg Config, scriptPath, planPath string) string {
	py := strings.TrimSpace(cfg.Python)
	if py == "" {
		py = "python3"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s -c \"$(cat %s)\" --plan \"$(cat %s)\"", py, remote.Quote(scriptPath), remote.Quote(planPath))
	if cfg.WarmupMs > 0 {
		fmt.Fprintf(&b, " --warmup-ms %g", cfg.WarmupMs)
	}
	if cfg.RepMs > 0 {
		fmt.Fprintf(&b, " --rep-ms %g", cfg.RepMs)
	}
	if cfg.NoCalib {
		b.WriteString(" --no-calib")
	}
	return b.String()
}

// Run uploads the script and the plan, runs the script and emits its
// results as events: KindMicroEnv, KindMicroCalib, KindMicroResult per GEMM,
// KindMicroStep per batch size, KindMicroProgress while it runs, and
// KindMicroError for a GEMM that failed or a script that died (results
// before that are already emitted). When the GPUs are busy it returns a
// *pyrun.BusyError before uploading anything, unless cfg.Force.
func Run(ctx context.Context, cfg Config, em *phases.Emitter) error {
	if cfg.Host == nil {
		return errors.New("micro: no host")
	}
	if len(cfg.Plan.GEMMs) == 0 {
		return errors.New("micro: the plan has no GEMMs")
	}
	if !cfg.Force {
		var busy *pyrun.BusyError
		if err := pyrun.CheckGPUs(ctx, cfg.Host); errors.As(err, &busy) {
			return busy
		}
	}
	planJSON, err := json.Marshal(cfg.Plan)
	if err != nil {
		return err
	}
	script, err := pyrun.Upload(ctx, cfg.Host, cfg.WorkDir, "micro", Script, ".py")
	if err != nil {
		return err
	}
	planPath, err := pyrun.Upload(ctx, cfg.Host, cfg.WorkDir, "micro-plan", planJSON, ".json")
	if err != nil {
		return err
	}
	fatal := false
	err = pyrun.Run(ctx, pyrun.Spec{
		Host:       cfg.Host,
		Cmd:        Command(cfg, script, planPath),
		KillPrefix: killPrefix(cfg.Python),
		OnText:     cfg.OnText,
		OnLine: func(l pyrun.Line) {
			if cfg.OnRaw != nil {
				cfg.OnRaw(string(l.Raw))
			}
			if l.Type == "fatal" {
				fatal = true
			}
			if ev, ok := lineEvent(l); ok {
				em.Emit(ctx, ev.kind, ev.data)
			}
		},
	})
	if err != nil && ctx.Err() == nil && !fatal {
		em.Emit(ctx, phases.KindMicroError, phases.ScriptError{What: "micro script", Err: err.Error(), Fatal: true})
	}
	return err
}

// killPrefix drops docker's -i/-t flags: the stop command needs no stdin.
func killPrefix(py string) string {
	py = strings.TrimSpace(py)
	if py == "" {
		return "python3"
	}
	var out []string
	for _, w := range strings.Fields(py) {
		if w == "-i" || w == "-t" || w == "-it" || w == "-ti" {
			continue
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

type event struct {
	kind string
	data any
}

// LineEvent maps one line of the script's output to the event kind and
// payload it becomes; ok is false for lines that carry no result (start,
// done, unknown types, fields that do not decode).
func LineEvent(l pyrun.Line) (kind string, data any, ok bool) {
	ev, ok := lineEvent(l)
	if !ok {
		return "", nil, false
	}
	return ev.kind, ev.data, true
}

// lineEvent maps one script line to its event. Lines of unknown type, or
// whose fields do not decode, are skipped.
func lineEvent(l pyrun.Line) (event, bool) {
	decode := func(kind string, v any) (event, bool) {
		if l.Decode(v) != nil {
			return event{}, false
		}
		return event{kind, v}, true
	}
	switch l.Type {
	case "env":
		return decode(phases.KindMicroEnv, &phases.GPUEnv{})
	case "calib":
		return decode(phases.KindMicroCalib, &phases.Calib{})
	case "progress":
		return decode(phases.KindMicroProgress, &phases.Progress{})
	case "gemm":
		return decode(phases.KindMicroResult, &phases.GEMMResult{})
	case "step":
		return decode(phases.KindMicroStep, &phases.GEMMStep{})
	case "error":
		return decode(phases.KindMicroError, &phases.ScriptError{})
	case "fatal":
		var f pyrun.Fatal
		if l.Decode(&f) != nil {
			return event{}, false
		}
		return event{phases.KindMicroError, &phases.ScriptError{What: "micro script", Err: f.Err, Fatal: true}}, true
	}
	return event{}, false
}
