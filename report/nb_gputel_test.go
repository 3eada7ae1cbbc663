package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// A sweep with GPU figures: the notebook says what was sampled and what
// the host lacked, gives each level's power, clocks, throttling, J/token
// and link traffic, and draws them against the levels.
func TestNotebookGPULevels(t *testing.T) {
	nv := 310.0
	pc := 2.25
	lv := func(c int, w, jpt float64, thr string) phases.LevelResult {
		return phases.LevelResult{Concurrency: c, Completed: 10, OutputThroughput: float64(c) * 100, MedianTPOTms: 10,
			GPU: &phases.GPULevel{Source: "nvidia-smi dmon", GPUs: 8, Samples: 9, MeanPowerW: w, PeakPowerW: w + 200,
				MeanUtilPct: 88, PeakUtilPct: 99, MeanSMClockMHz: 1980, MinSMClockMHz: 1755, PowerThrottlePct: 37,
				Throttle: thr, JPerOutputToken: jpt, NVLinkGBs: &nv, PCIeGBs: &pc}}
	}
	evs := budgetEvents(phases.KindSessionPhaseStarted, phases.PhaseStarted{Name: "macro"},
		phases.KindMacroGPUSource, phases.GPUTelSource{Host: "gpu1", Source: "nvidia-smi dmon", Command: "nvidia-smi dmon -s pucvmet -d 1 --gpm-metrics 60,61", GPUs: 8, NVLink: true,
			Notes: []string{"energy is mean sampled power × time (nvidia-smi dmon has no energy counter): an estimate"}},
		phases.KindMacroLevel, lv(1, 2100, 2.61, ""), phases.KindMacroLevel, lv(2, 4400, 1.42, "power"))
	dir := t.TempDir()
	p := filepath.Join(dir, "nb.md")
	if err := WriteNotebook(p, evs, NotebookOptions{}); err != nil {
		t.Fatal(err)
	}
	md := string(mustRead(t, p))
	for _, want := range []string{"GPU telemetry: `nvidia-smi dmon -s pucvmet -d 1 --gpm-metrics 60,61` on gpu1, 8 GPUs",
		"once a second. Energy is mean sampled power", "| 2 | 4400 W mean total, 550 W per GPU | 4600 | 88% (peak 99%) | 1980 (1755) | power (37% / 0%) | 1.42 | 310 | 2.25 |", "J / output token"} {
		if !strings.Contains(md, want) {
			t.Errorf("notebook lacks %q:\n%s", want, md)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "nb.charts"))
	found := false
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-gpu.svg") {
			found = strings.Contains(string(mustRead(t, filepath.Join(dir, "nb.charts", e.Name()))), "Energy per output token")
		}
	}
	if !found {
		t.Errorf("no GPU chart among %v", ents)
	}
}
