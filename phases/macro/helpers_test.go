package macro_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/sim"
)

// startEmu serves an emulator on loopback for one test.
func startEmu(t testing.TB, cfg sim.EmulatorConfig) (*sim.Emulator, string) {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "test/model"
	}
	emu := sim.NewEmulator(cfg)
	srv := httptest.NewServer(emu)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		emu.Close()
	})
	return emu, srv.URL
}

func runSweep(t testing.TB, cfg macro.Config) *macro.Result {
	t.Helper()
	s, err := macro.NewSweep(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if d := (got - want) / want; d > tol || d < -tol {
		t.Errorf("%s = %.4f, want %.4f ±%.1f%% (off by %+.2f%%)", name, got, want, 100*tol, 100*d)
	} else {
		t.Logf("%s = %.4f (want %.4f, %+.3f%%)", name, got, want, 100*d)
	}
}
