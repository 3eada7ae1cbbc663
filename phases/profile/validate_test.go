package profile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/phases/validatetest"
	"github.com/profdeck/profdeck/remote/local"
)

// The capture fills in no default: a configuration missing a value it
// needs is bad input before any request or event, naming the field.
func TestCaptureRefusesMissingValues(t *testing.T) {
	full := profile.Complete(profile.Config{Host: local.New(), URL: "http://127.0.0.1:1", ProfilerDir: "/tmp/p"})
	validatetest.EachCleared(t, full, map[string]func(*profile.Config){
		"Host":        func(c *profile.Config) { c.Host = nil },
		"URL":         func(c *profile.Config) { c.URL = "" },
		"API":         func(c *profile.Config) { c.API = "" },
		"ProfilerDir": func(c *profile.Config) { c.ProfilerDir = " " },
		"Concurrency": func(c *profile.Config) { c.Concurrency = nil },
		"Steps":       func(c *profile.Config) { c.Steps = 0 },
		"InputLen":    func(c *profile.Config) { c.InputLen = 0 },
		"OutputLen":   func(c *profile.Config) { c.OutputLen = 0 },
		"StopTimeout": func(c *profile.Config) { c.StopTimeout = 0 },
		"RemoteOver":  func(c *profile.Config) { c.RemoteOver = 0 },
		"Python":      func(c *profile.Config) { c.Python = "" },
		"Top":         func(c *profile.Config) { c.Top = 0 },
	}, func(field string, cfg profile.Config) {
		err := validatetest.Names(t, field, cfg)
		if err == nil {
			return
		}
		events := make(chan phases.Event, 8)
		_, cerr := profile.CaptureLevels(context.Background(), cfg, &phases.Emitter{Out: events})
		var in *phases.InputError
		if !errors.As(cerr, &in) || !strings.Contains(cerr.Error(), err.Error()) || len(events) != 0 {
			t.Errorf("%s missing: the capture said %v with %d events, want bad input %q before any", field, cerr, len(events), err)
		}
	})
}
