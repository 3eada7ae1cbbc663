package vllmemu

import (
	"testing"
	"time"
)

// BenchmarkEmulatorStep is one engine step of 128 running requests: the
// scheduler's work between two step deadlines.
func BenchmarkEmulatorStep(b *testing.B) {
	e := New(Config{})
	defer e.Close()
	now := time.Now()
	running := make([]*emuReq, 128)
	for i := range running {
		running[i] = newEmuReq(64, 1<<30, now)
	}
	kv := 0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		running, kv = e.step(running, now, kv)
	}
}
