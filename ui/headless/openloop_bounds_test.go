package headless_test

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

// Open-loop rates that cannot finish a level, and a burstiness that is a
// burst, are bad input before any request (they never made progress, or
// sent 54.5 req/s for 10).
func TestSweepOpenLoopBoundsAreBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "1e-9"}, "--rate 1e-09 req/s: a level's"},
		{[]string{"--search", "rate", "--rate", "1e-6", "--slo", "tpot=50ms"}, "--rate 1e-06 req/s"},
		{[]string{"--rate", "10", "--burstiness", "1e-300"}, "--burstiness: 1e-300: want 0.1 to 1000"},
	} {
		code, _, se := runCLI(t, headless.SweepMain, append([]string{"--url", "http://127.0.0.1:1"}, c.args...)...)
		if code != headless.ExitBadInput || !strings.Contains(se, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, se, c.want)
		}
	}
}
