package report_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report"
)

func TestGatherSystemInfoFromTheSimulatedHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := sim.Start(ctx, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	si, err := report.GatherSystemInfo(ctx, d, "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 --api-key sk-abc123")
	if err != nil {
		t.Fatal(err)
	}
	if si.Host != "sim" || si.GPUName != "NVIDIA H200" || si.GPUCount != 8 || si.GPUMemoryMiB != 143771 ||
		si.Driver != "580.105.08" || si.CUDA != "13.0" || si.Torch != "2.9.0+cu129" || si.VLLM != "0.12.0" {
		t.Fatalf("%+v", si)
	}
	if si.Model != "moonshotai/Kimi-K2.5" || !strings.HasPrefix(si.ModelSummary, "kimi_k2: 61 layers, hidden 7168") {
		t.Fatalf("model %q summary %q", si.Model, si.ModelSummary)
	}
	if strings.Contains(si.LaunchCommand, "sk-abc123") {
		t.Fatalf("launch command keeps the key: %q", si.LaunchCommand)
	}
	for _, x := range si.Extra {
		if strings.HasPrefix(x, "not gathered") {
			t.Fatalf("something missing: %v", si.Extra)
		}
	}
}

// On this machine (usually no GPU, no torch) whatever is missing is named,
// and nothing missing is fatal.
func TestGatherSystemInfoNamesWhatIsMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := local.New()
	defer h.Close()
	si, err := report.GatherSystemInfo(ctx, h, "vllm serve /nonexistent/model --api-key abc-987")
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(si.Extra, " | ")
	for _, c := range []struct {
		missing bool
		named   string
	}{
		{si.GPUCount == 0, "GPUs and driver"},
		{si.CUDA == "", "driver CUDA version"},
		{si.Torch == "", "torch"},
		{si.VLLM == "", "vLLM"},
		{si.ModelSummary == "", "model config"},
	} {
		if c.missing != strings.Contains(joined, c.named) {
			t.Errorf("%q: missing %v, but Extra says %q", c.named, c.missing, joined)
		}
	}
	if si.Model != "/nonexistent/model" || strings.Contains(si.LaunchCommand, "abc-987") {
		t.Fatalf("model %q launch %q", si.Model, si.LaunchCommand)
	}
	t.Logf("local host: %+v", si)
}

// A deadline that passes before anything is gathered is an error; the
// simulated host answers at once, so a live context gathers everything.
func TestGatherSystemInfoAfterTheDeadline(t *testing.T) {
	d, err := sim.Start(context.Background(), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := report.GatherSystemInfo(ctx, d, ""); err == nil {
		t.Fatal("no error from a context that had ended")
	}
}
