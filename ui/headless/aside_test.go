package headless_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/ui/headless"
)

// When --json cannot be written at the end (its folder went away during
// the sweep), the result document is written to a temporary file instead
// and stderr says where: the measurements are not lost.
func TestSweepResultWrittenAsideWhenJSONFails(t *testing.T) {
	emu, url := startEmu(t, vllmemu.Config{StepTime: 20 * time.Millisecond})
	out := filepath.Join(t.TempDir(), "results")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var so, se bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- headless.SweepMain(ctx, []string{"--url", url, "--concurrency", "1", "--requests", "4", "--warmup", "0",
			"--input-len", "8", "--output-len", "16", "--metrics-url", "off", "--json", filepath.Join(out, "sweep.json")}, &so, &se)
	}()
	for emu.State().PromptTokens == 0 {
		select {
		case code := <-done:
			t.Fatalf("the sweep ended (exit %d) before a request: %s", code, se.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	code := <-done
	m := regexp.MustCompile(`--json \S+/sweep.json: .*; the document was written to (\S+) instead`).FindStringSubmatch(se.String())
	if code != headless.ExitStepFailed || m == nil {
		t.Fatalf("exit %d, stderr %q: want 3 and where the document went", code, se.String())
	}
	b, err := os.ReadFile(m[1])
	if err != nil || !strings.Contains(string(b), `"completed": 4`) {
		t.Fatalf("%s: %v\n%s", m[1], err, b)
	}
}
