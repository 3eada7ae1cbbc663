// Package doctortest writes stand-ins for the GPU host's tools (nvidia-smi,
// python3 with torch, torchrun, vllm) into a directory to put first on a
// PATH, so the doctor's checks run their real commands on this machine, or
// through a real sshd, without a GPU.
package doctortest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tools says what the stand-ins report.
type Tools struct {
	GPUs     int  // GPUs nvidia-smi lists (0: no nvidia-smi at all)
	UsedMiB  int  // memory in use on each
	Procs    int  // compute processes on GPU 0
	NoTorch  bool // python3 has no torch
	NoCUDA   bool // torch sees no GPU
	Torchrun bool // a torchrun is there
	VLLM     bool // a vllm program is there (and its package for python3)
}

// Write writes the stand-ins into a new directory and returns it.
func Write(t testing.TB, tl Tools) string {
	t.Helper()
	dir := t.TempDir()
	if tl.GPUs > 0 {
		var gpus, apps strings.Builder
		for i := range tl.GPUs {
			fmt.Fprintf(&gpus, "%d, NVIDIA H200, %d, 143771\n", i, tl.UsedMiB)
		}
		for i := range tl.Procs {
			fmt.Fprintf(&apps, "%d, python3, 1024\n", 4000+i)
		}
		data(t, dir, "gpus.csv", gpus.String())
		data(t, dir, "apps.csv", apps.String())
		script(t, dir, "nvidia-smi", `d=$(dirname "$0")
case "$*" in
*query-gpu*) cat "$d/gpus.csv" ;;
*query-compute-apps*) cat "$d/apps.csv" ;;
*) echo "NVIDIA-SMI 570.00" ;;
esac`)
	}
	probe := map[bool]string{true: `{"marker": "profdeck-doctor", "python": "3.12.3"}`,
		false: fmt.Sprintf(`{"marker": "profdeck-doctor", "python": "3.12.3", "torch": "2.9.0+cu129", "cuda": "12.9", "cuda_ok": %t, "devices": %d%s}`,
			!tl.NoCUDA, map[bool]int{true: 0, false: tl.GPUs}[tl.NoCUDA], map[bool]string{true: `, "vllm": "0.11.2"`}[tl.VLLM])}[tl.NoTorch]
	script(t, dir, "python3", "echo '"+probe+"'")
	if tl.Torchrun {
		script(t, dir, "torchrun", "exit 0")
	}
	if tl.VLLM {
		script(t, dir, "vllm", "exit 0")
	}
	return dir
}

func script(t testing.TB, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func data(t testing.TB, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
