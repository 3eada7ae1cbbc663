package ui

import (
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// BenchmarkRouteBatch routes one batch of 1,000 live events (sweep ticks,
// /metrics scrapes, GPU samples, keepalive round trips) through the table
// to the panes, as the root does about every 250 ms.
func BenchmarkRouteBatch(b *testing.B) {
	m, _, _ := newTestRoot(b)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var evs []phases.Event
	for i := range 1000 {
		switch i % 4 {
		case 0:
			evs = append(evs, phases.New(at, phases.KindMacroTick, phases.MacroTick{Concurrency: 64}))
		case 1:
			evs = append(evs, phases.New(at, phases.KindMacroServer, phases.ServerStats{Available: true}))
		case 2:
			evs = append(evs, phases.New(at, phases.KindLoadGPU, phases.GPUSample{Host: "gpu1"}))
		default:
			evs = append(evs, phases.New(at, phases.KindSessionRTT, phases.ConnState{Host: "gpu1", State: "up", RTTms: 3}))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		m.route(batchMsg{at: at, events: evs})
	}
}
