package gputel_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gputel"
	"github.com/profdeck/profdeck/remote/local"
)

// fakeSMI puts an nvidia-smi on PATH whose dmon prints rows (one GPU).
func fakeSMI(t *testing.T, rows string) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\ncase \"$*\" in *gpm*) exit 1;; *nvlink*) exit 0;; esac\n" +
		"echo '# gpu pwr gtemp sm mem pclk'\necho '# Idx W C % % MHz'\n" +
		"case \"$*\" in *'-c 1'*) echo '0 100 40 10 5 1980'; exit 0;; esac\n" +
		"while :; do printf '%s\\n' " + rows + "; sleep 0.2; done\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
}

// runSampler runs a sampler on the local host for d, and returns its
// events and the level summary of that time.
func runSampler(t *testing.T, d time.Duration) ([]phases.Event, *phases.GPULevel) {
	t.Helper()
	s := gputel.New(local.New(), gputel.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var c collect
	done := make(chan struct{})
	from := time.Now()
	go func() { defer close(done); _ = s.Run(ctx, c.emitter(ctx)) }()
	time.Sleep(d)
	lv := s.Level(from, time.Now(), 100)
	cancel()
	<-done
	return c.kinds(phases.KindMacroGPUSource), lv
}

// One dmon power of 1e308 is dropped with a warning: the level's mean is
// finite and the result can be written as JSON.
func TestSamplerDropsAnImpossiblePower(t *testing.T) {
	fakeSMI(t, "'0 1e308 40 50 5 1980' '0 300 40 50 5 1980'")
	srcs, lv := runSampler(t, 2500*time.Millisecond)
	if lv == nil || lv.Samples == 0 {
		t.Fatalf("level %+v", lv)
	}
	if _, err := json.Marshal(lv); err != nil || lv.MeanPowerW != 300 {
		t.Fatalf("level %+v: %v", lv, err)
	}
	warned := false
	for _, ev := range srcs {
		for _, n := range ev.Data.(phases.GPUTelSource).Notes {
			warned = warned || strings.Contains(n, `pwr "1e308" is not a possible reading`)
		}
	}
	if !warned {
		t.Fatalf("no warning in %+v", srcs)
	}
}

// dmon printing "-" for every value reads unknown, not "0 W, SM 0%".
func TestSamplerAllUnknownReadsUnknown(t *testing.T) {
	fakeSMI(t, "'0 - - - - -'")
	_, lv := runSampler(t, 1500*time.Millisecond)
	if lv == nil || !lv.NoReadings || !strings.Contains(lv.Line(), "unknown") || strings.Contains(lv.Line(), "0 W") {
		t.Fatalf("level %+v, line %q", lv, lv.Line())
	}
}
