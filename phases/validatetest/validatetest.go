// Package validatetest holds the engines' shared test that a configuration
// missing a value is refused: each value a run needs is cleared in turn and
// the refusal must name the field. Only tests import it.
package validatetest

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// Validator is an engine's configuration: it checks itself.
type Validator interface{ Validate() error }

// EachCleared fails the test at once unless full is valid; then, for each
// field, it clears that field in a copy of full and hands the copy to check.
func EachCleared[C Validator](t *testing.T, full C, clears map[string]func(*C), check func(field string, cfg C)) {
	t.Helper()
	if err := full.Validate(); err != nil {
		t.Fatalf("a complete configuration refused: %v", err)
	}
	for field, clear := range clears {
		cfg := full
		clear(&cfg)
		check(field, cfg)
	}
}

// Names returns cfg's Validate error when it starts "field:"; otherwise
// it fails the test and returns nil.
func Names[C Validator](t *testing.T, field string, cfg C) error {
	t.Helper()
	err := cfg.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), field+":") {
		t.Errorf("%s missing: got %v, want an error naming it", field, err)
		return nil
	}
	return err
}

// FinishNames runs an engine and checks that it returns an error
// containing want and emits a failed finish naming field.
func FinishNames(t *testing.T, field, want string, run func(*phases.Emitter) error) {
	t.Helper()
	events := make(chan phases.Event, 8)
	err := run(&phases.Emitter{Out: events})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s missing: %v", field, err)
	}
	close(events)
	var finished bool
	for ev := range events {
		if f, ok := ev.Data.(phases.PhaseFinished); ok && f.Outcome == phases.OutcomeFailed && strings.Contains(f.Err, field) {
			finished = true
		}
	}
	if !finished {
		t.Errorf("%s missing: no finish naming it", field)
	}
}
