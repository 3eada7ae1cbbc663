// Package emutest serves the vLLM emulator on loopback for tests.
package emutest

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// Start serves an emulator on 127.0.0.1 until the test ends and returns it
// with its base URL; the model is "test/model" unless cfg names one.
func Start(t testing.TB, cfg vllmemu.Config) (*vllmemu.Emulator, string) {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "test/model"
	}
	emu := vllmemu.New(cfg)
	srv := httptest.NewServer(emu)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		emu.Close()
	})
	return emu, srv.URL
}

// Timed runs a check of timing against the emulator's schedule, and once
// more when the first run misses: on a shared machine one run's timers can
// slip past what the check holds, while a client that measures wrong
// misses both runs. run returns what it missed; the second run's misses
// are the test's errors.
func Timed(t testing.TB, run func() (misses []string)) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		misses := run()
		switch {
		case len(misses) == 0:
			return
		case attempt == 2:
			for _, m := range misses {
				t.Error(m)
			}
			return
		}
		t.Logf("the first run missed: %s; running again", strings.Join(misses, "; "))
	}
}
