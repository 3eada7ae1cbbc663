package macro

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// TestLimitsFromServerLog: a launch command without --max-num-seqs leaves
// the limit to the server's log, read from the host.
func TestLimitsFromServerLog(t *testing.T) {
	ctx := context.Background()
	d, err := sim.Start(ctx, sim.Options{AutoStart: true, LoadTime: time.Second, Emulator: vllmemu.Config{MaxNumSeqs: 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg := Config{Host: d, ServerLog: d.Options().LogPath}
	deadline := time.Now().Add(5 * time.Second)
	var lim Limits
	for time.Now().Before(deadline) {
		if lim = readLimits(ctx, cfg); lim.MaxNumSeqs > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lim.MaxNumSeqs != 64 || !strings.Contains(lim.Source, "log") {
		t.Fatalf("limits %+v", lim)
	}
	// The launch command's value wins; no host, no log: nothing read.
	cfg.Limits = Limits{MaxNumSeqs: 32, Source: "the launch command"}
	if got := readLimits(ctx, cfg); got.MaxNumSeqs != 32 {
		t.Errorf("launch command overridden: %+v", got)
	}
	if got := readLimits(ctx, Config{ServerLog: "/x"}); got.MaxNumSeqs != 0 {
		t.Errorf("no host: %+v", got)
	}
}
