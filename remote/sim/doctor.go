package sim

import (
	"context"
	"encoding/json"
	"strings"
)

// The checks `profdeck doctor` runs that the shell's own commands do not
// answer: its python probe (one JSON line marked "profdeck-doctor") and
// df for the profiler directory's free space.

// isDoctorProbe reports whether cmd is the doctor's python probe.
func isDoctorProbe(cmd string) bool {
	return strings.Contains(cmd, `"profdeck-doctor"`) && runsPython3(Words(cmd))
}

func runDoctorProbe(ctx context.Context, d *Deployment, c call) error {
	out := c.out
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(map[string]any{"marker": "profdeck-doctor", "python": "3.12.3", "torch": simTorch,
		"vllm": simVLLM, "cuda": simTorchCUDA, "cuda_ok": true, "devices": d.opt.GPUs})
	if err != nil {
		return err
	}
	Stdout(out, string(b))
	return nil
}

// runDF answers `df -Pk DIR` with a 3.5 TB NVMe disk, 2.1 TB of it free.
func runDF(ctx context.Context, d *Deployment, c call) error {
	cmd, out := c.cmd, c.out
	w := Words(cmd)
	dir := w[len(w)-1]
	if !d.fs.exists(dir) {
		msg := "df: " + dir + ": No such file or directory"
		Stderr(out, msg)
		return Exit(cmd, 1, msg)
	}
	Stdout(out, "Filesystem     1024-blocks       Used  Available Capacity Mounted on")
	Stdout(out, "/dev/nvme0n1p1  3750000000 1610000000 2140000000      43% /")
	return nil
}

// runsPython3 reports whether the words run python3 -c (alone, or at the
// end of a prefix such as docker exec -i vllm python3).
func runsPython3(w []string) bool {
	for i := 0; i+1 < len(w); i++ {
		if w[i] == "python3" && w[i+1] == "-c" {
			return true
		}
	}
	return false
}
