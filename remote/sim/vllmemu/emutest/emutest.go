// Package emutest serves the vLLM emulator on loopback for tests.
package emutest

import (
	"net/http/httptest"
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
