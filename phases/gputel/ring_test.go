package gputel

import (
	"runtime"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// A day of rounds at 1 Hz from 8 GPUs keeps only the ring's hours, in
// memory that stops growing once the ring is full.
func TestRingBoundedOverADay(t *testing.T) {
	s := New(nil, Options{Keep: time.Hour})
	s.src.Source = SourceDmon
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := 500.0
	gpus := make([]phases.GPUTel, 8)
	for i := range gpus {
		gpus[i] = phases.GPUTel{Index: i, PowerW: &p, UtilPct: &p}
	}
	var ms runtime.MemStats
	var heapAtHour uint64
	for sec := range 24 * 3600 {
		s.rb.add(phases.GPUTelSample{At: t0.Add(time.Duration(sec) * time.Second), GPUs: gpus})
		if sec == 3600 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heapAtHour = ms.HeapAlloc
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if len(s.rb.rounds) != 3600 {
		t.Fatalf("%d rounds kept", len(s.rb.rounds))
	}
	if ms.HeapAlloc > heapAtHour+1<<20 {
		t.Fatalf("heap grew from %d to %d bytes after the ring filled", heapAtHour, ms.HeapAlloc)
	}
	end := t0.Add(24 * time.Hour)
	lv := s.Level(end.Add(-10*time.Minute), end, 1000)
	if lv.Samples != 600 || lv.MeanPowerW != 8*500 || lv.EnergyJ != 4000*600 || lv.JPerOutputToken != 2400 {
		t.Fatalf("level = %+v", lv)
	}
	old := s.Level(t0, t0.Add(2*time.Hour), 1000)
	if old.Samples != 0 || old.Note == "" {
		t.Fatalf("a window older than the ring: %+v", old)
	}
}

// The probe's answers: GPM NVLink metrics used only where there are links.
func TestReadProbe(t *testing.T) {
	dmonGPM := "# gpu pwr nvlrx nvltx\n# Idx W GPM:MiB/s GPM:MiB/s\n 0 70 - -\n 1 71 0 0\n"
	links := "GPU 0: NVIDIA H200 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: 26.562 GB/s\n"
	src := phases.GPUTelSource{Host: "h"}
	if gpm := readProbe(probed{gpmOK: true, dmon: dmonGPM, nvlink: links, dcgmi: true}, &src); !gpm || !src.NVLink || src.GPUs != 2 || src.NVLinkPeakGBs != 53.124 || len(src.Notes) != 2 {
		t.Fatalf("gpm=%v src=%+v", gpm, src)
	}
	src = phases.GPUTelSource{Host: "h"}
	if gpm := readProbe(probed{gpmOK: true, dmon: dmonGPM, nvlink: "GPU 0: NVIDIA H200 (UUID: GPU-1)\n"}, &src); gpm || src.NVLink || src.Command != "nvidia-smi dmon -s pucvmet -d 1" {
		t.Fatalf("no links: gpm=%v src=%+v", gpm, src)
	}
	src = phases.GPUTelSource{Host: "h"}
	if readProbe(probed{dmon: "Failed to initialize NVML: Driver/library version mismatch\n"}, &src); src.Source != "" || len(src.Notes) != 1 {
		t.Fatalf("no rows: %+v", src)
	}
}
