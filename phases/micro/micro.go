package micro

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/pyrun"
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
	WorkDir string // where the script is uploaded
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
// results as events: KindMicroEnv, KindMicroCalib, KindMicroGEMM per GEMM,
// KindMicroStep per batch size, KindMicroProgress while it runs, and
// KindMicroError for a GEMM that failed or a script that died (results
// before that are already emitted). When the GPUs are busy it returns a
// *pyrun.BusyError before uploading anything, unless cfg.Force.
func Run(ctx context.Context, cfg Config, em *phases.Emitter) error {
	p := cfg.Plan
	params := map[string]any{"model": p.Model, "tp": p.TP, "ep": p.EP, "batch": p.Batch, "python": cfg.Python,
		"gemms": len(p.GEMMs), "force": cfg.Force}
	return phases.Run(ctx, em, phases.Micro, params, func(ctx context.Context) error { return run(ctx, cfg, em) })
}

// Validate checks that cfg is complete; the error names the field. The
// run fills in no default: the campaign (package campaign) holds them.
func (cfg Config) Validate() error {
	switch {
	case cfg.Host == nil:
		return errors.New("Host: no host")
	case strings.TrimSpace(cfg.Python) == "":
		return errors.New("Python: not set: the command prefix that runs Python on the host (e.g. python3)")
	case strings.TrimSpace(cfg.WorkDir) == "":
		return errors.New("WorkDir: not set: where the script is uploaded on the host")
	case len(cfg.Plan.GEMMs) == 0:
		return errors.New("Plan: the plan has no GEMMs")
	}
	return nil
}

func run(ctx context.Context, cfg Config, em *phases.Emitter) error {
	if err := cfg.Validate(); err != nil {
		return &phases.InputError{Err: fmt.Errorf("micro: %w", err)}
	}
	if !cfg.Force {
		if err := pyrun.Busy(ctx, cfg.Host); err != nil {
			return err
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
	return lines.Stream(ctx, pyrun.Spec{
		Host:       cfg.Host,
		Cmd:        Command(cfg, script, planPath),
		KillPrefix: killPrefix(cfg.Python),
		OnText:     cfg.OnText,
	}, em, cfg.OnRaw, nil)
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

// lines maps the script's lines to the phase's events.
var lines = pyrun.Events{What: "micro script", ErrorKind: phases.KindMicroError, Types: map[string]pyrun.Kind{
	"env":      pyrun.As[phases.GPUEnv](phases.KindMicroEnv),
	"calib":    pyrun.As[phases.Calib](phases.KindMicroCalib),
	"progress": pyrun.As[phases.Progress](phases.KindMicroProgress),
	"gemm":     pyrun.As[phases.GEMMResult](phases.KindMicroGEMM),
	"step":     pyrun.As[phases.GEMMStep](phases.KindMicroStep),
	"error":    pyrun.As[phases.ScriptError](phases.KindMicroError),
}}

// LineEvent maps one line of the script's output to the event kind and
// payload it becomes; ok is false for lines that carry no result (start,
// done, unknown types, fields that do not decode).
func LineEvent(l pyrun.Line) (kind string, data any, ok bool) { return lines.Event(l) }
