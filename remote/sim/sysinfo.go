package sim

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// isSysinfoProbe reports whether cmd is the python probe profdeck runs once
// per campaign for torch's and vLLM's versions and the model's config
// (report.GatherSystemInfo). Its script prints one JSON line marked
// "profdeck-sysinfo".
func isSysinfoProbe(cmd string) bool {
	return strings.HasPrefix(cmd, "python3 -c ") && strings.Contains(cmd, "profdeck-sysinfo")
}

// Simulated software versions: the same everywhere the host shows one (the
// system probe, the micro and NCCL scripts, the server's log and /version).
const (
	simTorch     = "2.9.0+cu129"
	simTorchCUDA = "12.9"
	simVLLM      = vllmemu.Version
)

func runSysinfo(ctx context.Context, d *Deployment, c call) error {
	cmd, out := c.cmd, c.out
	if err := ctx.Err(); err != nil {
		return err
	}
	w := Words(cmd)
	model := ""
	if len(w) >= 4 {
		model = w[3]
	}
	r := map[string]any{
		"marker":     "profdeck-sysinfo",
		"torch":      simTorch,
		"torch_cuda": simTorchCUDA,
		"vllm":       simVLLM,
	}
	if model != "" && model == d.opt.Model && strings.Contains(strings.ToLower(model), "kimi") {
		r["config"] = json.RawMessage(kimiK25Config)
		r["config_path"] = "/root/.cache/huggingface/hub/models--" + strings.ReplaceAll(model, "/", "--") + "/snapshots/sim/config.json"
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	Stdout(out, string(b))
	return nil
}
