package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/pyrun"
	"github.com/profdeck/profdeck/remote"
)

// shared holds what several checks read once: the python probe and the
// server's answers, each within its own timeout of the run's context.
type shared struct {
	python func() (pyInfo, error)
	server func() serverInfo
}

func newShared(ctx context.Context, cfg *Config) *shared {
	return &shared{
		python: sync.OnceValues(func() (pyInfo, error) {
			ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			defer cancel()
			return probePython(ctx, cfg)
		}),
		server: sync.OnceValue(func() serverInfo {
			ctx, cancel := context.WithTimeout(ctx, min(cfg.Timeout, 10*time.Second))
			defer cancel()
			return probeServer(ctx, cfg)
		}),
	}
}

// run runs cmd on the host and returns its stdout.
func run(ctx context.Context, cfg *Config, cmd string) (string, error) {
	return remote.Output(ctx, cfg.Host, cmd)
}

// checkHost: the host answers a command, and how an SSH host was trusted.
func checkHost(ctx context.Context, cfg *Config, _ *shared) phases.DoctorCheck {
	t := time.Now()
	out, err := run(ctx, cfg, "uname -sm")
	rtt := time.Since(t)
	if err != nil {
		return fail("runs no command: "+cmdErr(err), "check the account's shell and that commands may run over SSH")
	}
	how := "this machine"
	switch {
	case remote.IsSimulated(cfg.Host):
		how = "SIMULATED deployment"
	case isForwarder(cfg.Host):
		how = "SSH, host key verified against known_hosts"
	}
	return ok("%s (%s): %s, a command in %.1f ms", cfg.Host.Name(), how, strings.TrimSpace(out), ms(rtt))
}

func isForwarder(h remote.Host) bool {
	_, is := h.(remote.Forwarder)
	return is
}

// checkCampaign says which campaign is checked; its keys were validated
// before the host was opened (a bad key is bad input).
func checkCampaign(_ context.Context, cfg *Config, _ *shared) phases.DoctorCheck {
	if cfg.Campaign == "" {
		return warn("no campaign file: the defaults", "write one with `profdeck init` (profdeck run needs it)")
	}
	return ok("%s", cfg.Campaign)
}

// smiGPUs is nvidia-smi's per-GPU query.
const smiGPUs = "nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv,noheader,nounits"

// gpu is one row of smiGPUs.
type gpu struct {
	name        string
	used, total int
}

// parseGPUs reads smiGPUs's rows; rows it cannot read are skipped.
func parseGPUs(out string) []gpu {
	var gs []gpu
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) < 4 {
			continue
		}
		used, err1 := strconv.Atoi(strings.TrimSpace(f[len(f)-2]))
		total, err2 := strconv.Atoi(strings.TrimSpace(f[len(f)-1]))
		if err1 != nil || err2 != nil {
			continue
		}
		gs = append(gs, gpu{name: strings.TrimSpace(strings.Join(f[1:len(f)-2], ",")), used: used, total: total})
	}
	return gs
}

// checkGPUs: nvidia-smi answers, the host has the GPUs the campaign uses,
// and what holds their memory.
func checkGPUs(ctx context.Context, cfg *Config, s *shared) phases.DoctorCheck {
	out, err := run(ctx, cfg, smiGPUs)
	if err != nil {
		return fail("nvidia-smi: "+cmdErr(err), "install the NVIDIA driver, or put nvidia-smi on the PATH of the SSH account")
	}
	gs := parseGPUs(out)
	if len(gs) == 0 {
		return fail("nvidia-smi lists no GPU", "check the driver (nvidia-smi -L)")
	}
	apps, _ := run(ctx, cfg, pyrun.SMIQuery)
	procs := pyrun.ParseComputeApps(apps)
	used, total := 0, 0
	for _, g := range gs {
		used, total = used+g.used, total+g.total
	}
	found := fmt.Sprintf("%d× %s, %.0f of %.0f GiB in use, %d process(es) on them", len(gs), gs[0].name,
		float64(used)/1024, float64(total)/1024, len(procs))
	if cfg.GPUs > len(gs) {
		return fail(found+fmt.Sprintf("; the campaign uses %d", cfg.GPUs), "set model.tp to the GPUs this host has, or list the nodes under hosts:")
	}
	if len(procs) > 0 && !s.server().up {
		return warn(found+" ("+procList(procs)+") while the server does not answer",
			"stop them before micro and nccl (they refuse busy GPUs unless --force)")
	}
	return ok("%s", found)
}

func procList(ps []pyrun.GPUProc) string {
	var names []string
	for i, p := range ps {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(ps)-3))
			break
		}
		names = append(names, fmt.Sprintf("pid %d %s", p.PID, p.Name))
	}
	return strings.Join(names, ", ")
}

// Marker starts the python probe's output line (and lets the simulated host
// recognise the probe).
const Marker = "profdeck-doctor"

// pyProbe prints python's, torch's, CUDA's, vLLM's and SGLang's versions
// as one JSON line; the engines' versions come from package metadata, so
// neither is imported.
const pyProbe = `import json, sys
r = {"marker": "` + Marker + `", "python": sys.version.split()[0]}
try:
    from importlib.metadata import version
    for k in ("torch", "vllm", "sglang"):
        try:
            r[k] = version(k)
        except Exception:
            pass
except Exception:
    pass
try:
    import torch
    r["cuda"] = torch.version.cuda or ""
    r["cuda_ok"] = bool(torch.cuda.is_available())
    r["devices"] = torch.cuda.device_count()
except Exception as e:
    r["torch_err"] = str(e)[:200]
print(json.dumps(r))
`

// pyInfo is the probe's answer.
type pyInfo struct {
	Python   string `json:"python"`
	Torch    string `json:"torch"`
	VLLM     string `json:"vllm"`
	SGLang   string `json:"sglang"`
	CUDA     string `json:"cuda"`
	CUDAOK   bool   `json:"cuda_ok"`
	Devices  int    `json:"devices"`
	TorchErr string `json:"torch_err"`
}

// probePython runs the probe with micro's python and reads its line.
func probePython(ctx context.Context, cfg *Config) (pyInfo, error) {
	py := strings.TrimSpace(cfg.Python)
	out, err := run(ctx, cfg, py+" -c "+remote.Quote(pyProbe))
	if err != nil {
		return pyInfo{}, err
	}
	return parsePy(out)
}

// parsePy reads the probe's marked line out of out.
func parsePy(out string) (pyInfo, error) {
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `"`+Marker+`"`) {
			continue
		}
		var p pyInfo
		if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &p); err != nil {
			return pyInfo{}, fmt.Errorf("unreadable answer: %v", err)
		}
		return p, nil
	}
	return pyInfo{}, fmt.Errorf("no answer line in %q", oneLine(out, 80))
}

// checkPython: micro's python runs, with torch built for CUDA and seeing
// the GPUs.
func checkPython(_ context.Context, cfg *Config, s *shared) phases.DoctorCheck {
	py := strings.TrimSpace(cfg.Python)
	p, err := s.python()
	fix := "install torch for " + py + ", or set micro.python (e.g. docker exec -i vllm python3)"
	switch {
	case err != nil:
		return fail(py+": "+cmdErr(err), "set micro.python to a python3 on the host (e.g. docker exec -i vllm python3)")
	case p.Torch == "":
		return fail(py+" "+p.Python+" has no torch", fix)
	case p.TorchErr != "":
		return fail(fmt.Sprintf("%s %s: torch %s does not import: %s", py, p.Python, p.Torch, oneLine(p.TorchErr, 120)), fix)
	case p.CUDA == "":
		return fail(fmt.Sprintf("%s %s: torch %s is built without CUDA", py, p.Python, p.Torch), "install a CUDA build of torch for "+py)
	case !p.CUDAOK || p.Devices == 0:
		return fail(fmt.Sprintf("%s %s: torch %s (CUDA %s) sees no GPU", py, p.Python, p.Torch, p.CUDA),
			"check CUDA_VISIBLE_DEVICES and that the driver supports CUDA "+p.CUDA)
	case p.Devices < cfg.GPUs:
		return fail(fmt.Sprintf("%s %s: torch %s (CUDA %s) sees %d GPU(s); the campaign uses %d", py, p.Python, p.Torch, p.CUDA, p.Devices, cfg.GPUs),
			"check CUDA_VISIBLE_DEVICES on the host")
	}
	return ok("%s %s, torch %s, CUDA %s, %d GPU(s) visible", py, p.Python, p.Torch, p.CUDA, p.Devices)
}

// checkTorchrun: nccl's torchrun is found on the host.
func checkTorchrun(ctx context.Context, cfg *Config, _ *shared) phases.DoctorCheck {
	tr := strings.TrimSpace(cfg.Torchrun)
	cmd := "command -v " + remote.Quote(tr)
	if len(strings.Fields(tr)) > 1 {
		cmd = tr + " --help >/dev/null" // a prefix (docker exec … torchrun): run it
	}
	out, err := run(ctx, cfg, cmd)
	if err != nil {
		return fail(tr+" is not found on "+cfg.Host.Name(), "install torch's torchrun on the host, or set nccl.torchrun (e.g. docker exec -i vllm torchrun)")
	}
	if p := strings.TrimSpace(out); p != "" {
		return ok("%s", p)
	}
	return ok("%s runs", tr)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
