package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote"
)

// Commands GatherSystemInfo runs on the host.
const (
	SMITableCmd = "nvidia-smi"
	// SysinfoMarker identifies the python probe's output (and lets the
	// simulated host recognise the command).
	SysinfoMarker = "profdeck-sysinfo"
)

// pySysinfo prints torch's and vLLM's versions (from package metadata, so
// vLLM is not imported), torch's CUDA, and the model's config.json when it
// is a local directory or in the Hugging Face cache, as one JSON line.
const pySysinfo = `import json, os, sys
r = {"marker": "` + SysinfoMarker + `"}
try:
    from importlib.metadata import version
    for k in ("torch", "vllm"):
        try:
            r[k] = version(k)
        except Exception as e:
            r[k + "_err"] = "not installed"
except Exception as e:
    r["err"] = str(e)[:200]
try:
    import torch
    r["torch_cuda"] = torch.version.cuda or ""
except Exception as e:
    r["torch_cuda_err"] = str(e)[:200]
m = sys.argv[1] if len(sys.argv) > 1 else ""
p = ""
if m and os.path.isfile(os.path.join(m, "config.json")):
    p = os.path.join(m, "config.json")
elif m:
    try:
        from huggingface_hub import try_to_load_from_cache
        c = try_to_load_from_cache(m, "config.json")
        if isinstance(c, str):
            p = c
    except Exception:
        pass
if p:
    try:
        with open(p) as f:
            r["config"] = json.load(f)
        r["config_path"] = p
    except Exception as e:
        r["config_err"] = str(e)[:200]
print(json.dumps(r))
`

// PySysinfoCmd is the python probe's command line for model (may be "").
func PySysinfoCmd(model string) string {
	return "python3 -c " + remote.Quote(pySysinfo) + " " + remote.Quote(model)
}

// GatherSystemInfo asks the host for its GPUs, driver, CUDA, torch and vLLM
// versions and the model's config, for the notebook's header. Every piece is
// optional: what cannot be gathered is left empty and named in Extra. The
// launch command is kept with secret-looking values hidden. The error is
// the context's, and only when it ended before anything was gathered: a
// partial answer is returned with what is missing named.
func GatherSystemInfo(ctx context.Context, host remote.Host, launch string) (phases.SystemInfo, error) {
	si := phases.SystemInfo{Host: host.Name(), LaunchCommand: remote.ScrubSecrets(strings.TrimSpace(launch))}
	si.Model = ModelFromLaunch(launch)
	run := func(cmd string, timeout time.Duration) (string, error) {
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return remote.Output(c, host, cmd)
	}
	var missing []string
	if out, err := run(smi.InfoCommand, 20*time.Second); err != nil {
		missing = append(missing, "GPUs and driver ("+short(err)+")")
	} else if g := summarizeGPUs(smi.ParseInfo(out)); g.count == 0 {
		missing = append(missing, "GPUs and driver (nvidia-smi printed no GPU)")
	} else {
		si.GPUName, si.GPUCount, si.GPUMemoryMiB, si.Driver = g.name, g.count, g.memMiB, g.driver
		if g.mixed != "" {
			si.Extra = append(si.Extra, "mixed GPUs: "+g.mixed)
		}
	}
	if out, err := run(SMITableCmd, 20*time.Second); err == nil {
		si.CUDA = parseCUDAVersion(out)
	}
	if si.CUDA == "" {
		missing = append(missing, "driver CUDA version")
	}
	if out, err := run(PySysinfoCmd(si.Model), 60*time.Second); err != nil {
		missing = append(missing, "torch and vLLM versions ("+short(err)+")")
	} else {
		py, err := parsePySysinfo(out)
		if err != nil {
			missing = append(missing, "torch and vLLM versions ("+err.Error()+")")
		} else {
			si.Torch, si.VLLM = py.Torch, py.VLLM
			if py.TorchCUDA != "" {
				si.Extra = append(si.Extra, "torch built for CUDA "+py.TorchCUDA)
			}
			if si.Torch == "" {
				missing = append(missing, "torch version (not installed for python3)")
			}
			if si.VLLM == "" {
				missing = append(missing, "vLLM version (not installed for python3)")
			}
			if len(py.Config) > 0 {
				if s, err := model.Summarize(py.Config); err == nil {
					si.ModelSummary = s
				}
			} else if si.Model != "" {
				missing = append(missing, "model config (not a local directory nor in the Hugging Face cache)")
			}
		}
	}
	if err := ctx.Err(); err != nil {
		missing = append(missing, "the rest (stopped: "+err.Error()+")")
	}
	if len(missing) > 0 {
		si.Extra = append(si.Extra, "not gathered: "+strings.Join(missing, "; "))
	}
	if err := ctx.Err(); err != nil && si.GPUCount == 0 && si.CUDA == "" && si.Torch == "" && si.VLLM == "" {
		return si, err // nothing was gathered before the context ended
	}
	return si, nil
}

func short(err error) string {
	var ee *remote.ExitError
	if errors.As(err, &ee) {
		s := strings.TrimSpace(ee.Stderr)
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		if len(s) > 120 {
			s = s[:120] + "…"
		}
		if s == "" {
			return fmt.Sprintf("exit status %d", ee.Status)
		}
		return s
	}
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// gpuSummary is what the system information says of the GPUs InfoCommand
// listed: the first one's name, driver and memory, how many, and each
// model's count when they differ ("2 × NVIDIA H200, 1 × NVIDIA H100").
type gpuSummary struct {
	name, driver, mixed string
	count, memMiB       int
}

func summarizeGPUs(gpus []smi.GPU) gpuSummary {
	var g gpuSummary
	names := map[string]int{}
	var order []string
	for _, gpu := range gpus {
		g.count++
		if names[gpu.Name] == 0 {
			order = append(order, gpu.Name)
		}
		names[gpu.Name]++
		if g.name == "" {
			g.name, g.driver = gpu.Name, gpu.Driver
			if m := gpu.MemoryTotalMiB; m != nil && *m >= 1 && *m == math.Trunc(*m) && *m < math.MaxInt32 {
				g.memMiB = int(*m)
			}
		}
	}
	if len(order) > 1 {
		parts := make([]string, len(order))
		for i, n := range order {
			parts[i] = fmt.Sprintf("%d × %s", names[n], n)
		}
		g.mixed = strings.Join(parts, ", ")
	}
	return g
}

var cudaRe = regexp.MustCompile(`CUDA Version\s*:\s*([0-9]+(?:\.[0-9]+)*)`)

// parseCUDAVersion finds "CUDA Version: 12.8" in nvidia-smi's output.
func parseCUDAVersion(out string) string {
	if m := cudaRe.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

type pyInfo struct {
	Marker    string          `json:"marker"`
	Torch     string          `json:"torch"`
	TorchCUDA string          `json:"torch_cuda"`
	VLLM      string          `json:"vllm"`
	Config    json.RawMessage `json:"config"`
}

// parsePySysinfo finds the probe's JSON line in its output.
func parsePySysinfo(out string) (pyInfo, error) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") || !strings.Contains(line, SysinfoMarker) {
			continue
		}
		var p pyInfo
		if err := json.Unmarshal([]byte(line), &p); err != nil || p.Marker != SysinfoMarker {
			continue
		}
		if string(p.Config) == "null" {
			p.Config = nil
		}
		return p, nil
	}
	return pyInfo{}, errors.New("python3 printed no result")
}

// ModelFromLaunch names the model a launch command serves: the word after
// "serve" (vllm serve MODEL) or the value of --model.
func ModelFromLaunch(launch string) string {
	w := strings.Fields(launch)
	for i, x := range w {
		x = strings.Trim(x, `'"`)
		switch {
		case strings.HasPrefix(x, "--model="):
			return strings.Trim(strings.TrimPrefix(x, "--model="), `'"`)
		case x == "--model" && i+1 < len(w):
			return strings.Trim(w[i+1], `'"`)
		}
	}
	for i, x := range w {
		if x == "serve" && i > 0 && strings.HasSuffix(w[i-1], "vllm") && i+1 < len(w) && !strings.HasPrefix(w[i+1], "-") {
			return strings.Trim(w[i+1], `'"`)
		}
	}
	return ""
}
