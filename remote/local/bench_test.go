package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// BenchmarkFollow measures how fast Follow delivers an existing log: a
// 100k-line vLLM-sized log (about 20 MB) per iteration.
func BenchmarkFollow(b *testing.B) {
	p := filepath.Join(b.TempDir(), "server.log")
	line := "(Worker_TP3 pid=2176) INFO 11-29 16:21:26 [gpu_model_runner.py:3549] Model loading took 74.4000 GiB memory and 1.25 seconds" + strings.Repeat(" ", 80)
	const n = 100000
	var sb strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "%s %d\n", line, i)
	}
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	h := &Host{PollInterval: time.Millisecond}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		got := 0
		_ = h.Follow(ctx, p, 0, func(ev remote.FollowEvent) {
			if got++; got == n {
				cancel()
			}
		})
		cancel()
	}
}

// BenchmarkRun measures starting and reaping one short command.
func BenchmarkRun(b *testing.B) {
	h := New()
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if err := h.Run(ctx, "echo hi", nil, func(remote.Line) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFollowIdle is one poll of a followed log with nothing new, what
// a follow does several times a second for hours while a server runs.
func BenchmarkFollowIdle(b *testing.B) {
	p := filepath.Join(b.TempDir(), "server.log")
	if err := os.WriteFile(p, []byte("INFO ready\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	fl := &follower{path: p, out: func(remote.FollowEvent) {}}
	defer fl.close()
	b.ReportAllocs()
	for b.Loop() {
		if err := fl.step(); err != nil {
			b.Fatal(err)
		}
	}
}
