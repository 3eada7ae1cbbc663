package headless

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/local"
)

// lostEngine is a sweep whose host connection went away after one level:
// it returns that level with the error, as the on-host sweep does.
type lostEngine struct{ macro.Engine }

func (lostEngine) Config() macro.Config {
	return macro.Config{URL: "http://127.0.0.1:1", Concurrency: []int{1, 2}}
}
func (lostEngine) Run(context.Context, *phases.Emitter) (*macro.Result, error) {
	return &macro.Result{Levels: []phases.LevelResult{{Concurrency: 1, Completed: 12}}}, errors.New("ssh: connection lost")
}

// A sweep that lost its host with levels kept exits 3 (partial results
// kept), not 1 (could not run).
func TestSweepLostConnectionWithLevelsExits3(t *testing.T) {
	var so, se bytes.Buffer
	c := New("sweep", "", &so, &se)
	err := sweep(context.Background(), c, lostEngine{}, local.New(), nil)
	if code := c.Exit(context.Background(), err); code != ExitStepFailed || !strings.Contains(se.String(), "interrupted after 1 level(s)") {
		t.Fatalf("exit %d, stderr %q: want 3", code, se.String())
	}
}
