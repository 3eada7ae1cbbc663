package load_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/load/diagnose"
	"github.com/profdeck/profdeck/phases/validatetest"
	"github.com/profdeck/profdeck/remote/local"
)

// The watcher, the diagnosis and the server fill in no default: what is
// missing is bad input naming the field, before any command on the host.
func TestLoadRefusesMissingValues(t *testing.T) {
	full := load.Complete(load.Config{Host: local.New()})
	validatetest.EachCleared(t, full, map[string]func(*load.Config){
		"Host":           func(c *load.Config) { c.Host = nil },
		"LogPath":        func(c *load.Config) { c.LogPath = "" },
		"StallAfter":     func(c *load.Config) { c.StallAfter = 0 },
		"Poll":           func(c *load.Config) { c.Poll = 0 },
		"SnapshotEvery":  func(c *load.Config) { c.SnapshotEvery = 0 },
		"DiagnoseWindow": func(c *load.Config) { c.DiagnoseWindow = 0 },
	}, func(field string, cfg load.Config) {
		err := cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%s missing: got %v, want an error naming it", field, err)
			return
		}
		events := make(chan phases.Event, 8)
		_, werr := load.NewWatcher(cfg).Until(context.Background(), &phases.Emitter{Out: events})
		var in *phases.InputError
		if !errors.As(werr, &in) || !strings.Contains(werr.Error(), err.Error()) || len(events) != 0 {
			t.Errorf("%s missing: the watcher said %v with %d events", field, werr, len(events))
		}
	})
	nodiag := full
	nodiag.NoDiagnosis, nodiag.DiagnoseWindow = true, 0
	if err := nodiag.Validate(); err != nil {
		t.Errorf("no diagnosis needs no window: %v", err)
	}

	d := diagnose.Config{Host: local.New(), Window: 1e9, Trigger: "request"}
	for field, clear := range map[string]func(*diagnose.Config){
		"Host":    func(c *diagnose.Config) { c.Host = nil },
		"Window":  func(c *diagnose.Config) { c.Window = 0 },
		"Trigger": func(c *diagnose.Config) { c.Trigger = "" },
	} {
		cfg := d
		clear(&cfg)
		if _, err := diagnose.Diagnose(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "diagnose: "+field) {
			t.Errorf("diagnosis without %s: %v", field, err)
		}
	}

	s := &load.Server{Host: local.New(), Settings: load.Settings{Launch: "touch /tmp/pd-never-launched"}}
	if _, err := s.Start(context.Background(), nil, nil); err == nil || !strings.Contains(err.Error(), "Settings.Log") {
		t.Errorf("a server with no log started: %v", err)
	}
	for field, set := range map[string]func(*load.Server){
		"StopTimeout":      func(s *load.Server) { s.ReleasedBelowGiB = 2 },
		"ReleasedBelowGiB": func(s *load.Server) { s.StopTimeout = time.Minute },
	} {
		s := &load.Server{Host: local.New(), Settings: load.Settings{Log: "/tmp/pd-never.log"}}
		set(s)
		if err := s.Stop(context.Background()); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("a stop without %s: %v", field, err)
		}
	}
}
