package campaignrun_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
)

// The run fills in no default: how to leave the server must be given, and
// a run without it is bad input naming the field, before any step.
func TestRunRefusesMissingLeave(t *testing.T) {
	events := make(chan phases.Event, 8)
	_, err := campaignrun.Run(context.Background(), campaignrun.Config{}, &phases.Emitter{Out: events})
	var in *phases.InputError
	if !errors.As(err, &in) || !strings.Contains(err.Error(), `Leave ""`) || len(events) != 0 {
		t.Errorf("got %v with %d events, want bad input naming Leave before any event", err, len(events))
	}
}
