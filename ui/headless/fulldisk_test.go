package headless_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/localfs/smalldisk"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/ui/headless"
)

// sweep --jsonl on a full disk: the lines cannot be written, the sweep ends
// with exit 3 and says how many lines were written.
func TestSweepJSONLOnFullDiskExits3(t *testing.T) {
	dir := smalldisk.Mount(t, 64<<10)
	smalldisk.Fill(t, dir)
	_, url := startEmu(t, vllmemu.Config{StepTime: time.Millisecond})
	code, _, se := runCLI(t, headless.SweepMain, "--url", url, "--concurrency", "1", "--requests", "3", "--warmup", "0",
		"--input-len", "8", "--output-len", "4", "--metrics-url", "off", "--jsonl", filepath.Join(dir, "r.jsonl"))
	if code != headless.ExitStepFailed || !strings.Contains(se, "--jsonl") || !strings.Contains(se, "no space left") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 3 saying the JSON lines failed", code, se)
	}
}

// --json on a full disk, written aside: exit 3 (a step of the command
// failed: its output), saying where the document went.
func TestSweepJSONOnFullDiskExits3(t *testing.T) {
	dir := smalldisk.Mount(t, 64<<10)
	smalldisk.Fill(t, dir)
	t.Setenv("TMPDIR", t.TempDir())
	_, url := startEmu(t, vllmemu.Config{StepTime: time.Millisecond})
	code, _, se := runCLI(t, headless.SweepMain, "--url", url, "--concurrency", "1", "--requests", "3", "--warmup", "0",
		"--input-len", "8", "--output-len", "4", "--metrics-url", "off", "--json", filepath.Join(dir, "r.json"))
	if code != headless.ExitStepFailed || !strings.Contains(se, "instead") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 3 saying where the document went", code, se)
	}
}
