package headless

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
)

// The whole campaign on the simulated deployment playing SGLang: every step
// is done, and the one load with the profiler sets SGLang's own variable.
func TestRunWholeCampaignOnSimSGLang(t *testing.T) {
	text := strings.Replace(simCampaign, "launch: vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --port 8000",
		"launch: python3 -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 --enable-metrics --port 8000\n  engine: sglang", 1)
	ctx, path := simRunSetup(t, "a whole campaign on the simulated host", text, 3*time.Minute)
	dir := filepath.Dir(path)
	o := runCmd(t, ctx, path)
	if o.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	for _, name := range campaignrun.StepsOneLoad {
		if s := stepState(o.rep, name); s.State != phases.StepDone {
			t.Errorf("step %s: %s (%s)", name, s.State, s.Reason)
		}
	}
	j, err := os.ReadFile(filepath.Join(dir, "nb.journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), "SGLANG_TORCH_PROFILER_DIR") || strings.Contains(string(j), "--profiler-config") {
		t.Errorf("the journal does not show the load with SGLANG_TORCH_PROFILER_DIR (nor without --profiler-config)")
	}
}
