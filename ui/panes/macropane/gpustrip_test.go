package macropane

import (
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// gpuEvents interleaves the recorded sweep's ticks with the GPU sampler's
// rounds: 8 GPUs whose power follows the tick's throughput, with NVLink.
func gpuEvents(t *testing.T, nvlink bool) []phases.Event {
	evs := loadEvents(t)
	src := phases.GPUTelSource{Host: "sim", Source: "nvidia-smi dmon", GPUs: 8, NVLink: nvlink, Command: "nvidia-smi dmon -s pucvmet -d 1"}
	if !nvlink {
		src.Notes = []string{"no NVLink on sim: link traffic is PCIe only"}
	}
	out := []phases.Event{phases.New(evs[0].Time, phases.KindMacroGPUSource, src)}
	for _, ev := range evs {
		if tk, ok := ev.Data.(phases.MacroTick); ok {
			w, u, l, p := 80+tk.OutputTokS/3, min(99, 5+tk.OutputTokS/15), tk.OutputTokS/50, 0.5
			var gs []phases.GPUTel
			for i := range 8 {
				gs = append(gs, phases.GPUTel{Index: i, PowerW: &w, UtilPct: &u, NVLinkRxGBs: &l, NVLinkTxGBs: &l, PCIeRxGBs: &p, PCIeTxGBs: &p})
			}
			out = append(out, phases.New(ev.Time.Add(-100*time.Millisecond), phases.KindMacroGPU, phases.GPUTelSample{Host: "sim", At: ev.Time, GPUs: gs}))
		}
		out = append(out, ev)
	}
	return out
}

// The strip: power, utilisation and link traffic, one line each, in the
// charts' label column and under their seconds, one sample per tick; it
// fits every size, and drops out before the charts lose their rows.
func TestGPUStrip(t *testing.T) {
	evs := gpuEvents(t, true)
	m := newPane(t, 120, 40, false)
	replay(m, evs, -1)
	v := plain(m)
	// The power is the current second's, all GPUs together, said so.
	for _, want := range []string{"GPUs now ", "W ▼", " ▲", "SM ", "NVLink "} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if len(m.gpu.power.v) != m.samples || m.samples == 0 {
		t.Fatalf("%d power samples for %d ticks", len(m.gpu.power.v), m.samples)
	}
	// A strip line is the label column and a sparkline the charts' width:
	// the pane's full width, like the chart rows above it.
	for _, l := range strings.Split(v, "\n") {
		if strings.HasPrefix(l, "GPUs now ") || strings.HasPrefix(l, "SM ") || strings.HasPrefix(l, "NVLink ") {
			if n := len([]rune(l)); n != 120 {
				t.Errorf("strip line %q is %d wide, want 120", l, n)
			}
		}
	}
	for _, sz := range [][2]int{{80, 24}, {78, 19}, {100, 30}, {200, 50}, {60, 14}, {40, 10}} {
		m := newPane(t, sz[0], sz[1], true)
		replay(m, gpuEvents(t, false), -1)
		panetest.Fits(t, m.View(), sz[0], sz[1])
		if sz[1] >= 24 && !strings.Contains(plain(m), "PCIe ") {
			t.Errorf("%dx%d: no PCIe line without NVLink:\n%s", sz[0], sz[1], plain(m))
		}
	}
}

// A host without nvidia-smi: one line says why, no strip.
func TestGPUStripNoTelemetry(t *testing.T) {
	evs := append([]phases.Event{phases.New(clock0, phases.KindMacroGPUSource, phases.GPUTelSource{Host: "local",
		Notes: []string{"no GPU telemetry on local: nvidia-smi is not there"}})}, loadEvents(t)...)
	m := newPane(t, 100, 30, false)
	replay(m, evs, -1)
	if v := plain(m); !strings.Contains(v, "GPU — no GPU telemetry on local: nvidia-smi is not there") || strings.Contains(v, "NVLink") {
		t.Fatalf("view:\n%s", v)
	}
}
