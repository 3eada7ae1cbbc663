package headless_test

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

// On host sim the quick settings (the sweep's requests, output length and
// warm-up) are said by the commands that send the sweep's requests, and
// by no other: nccl, micro and load do not use them.
func TestQuickSimNoteOnlyWhereItApplies(t *testing.T) {
	t.Parallel()
	const note = "quick settings"
	for _, c := range []struct {
		name string
		main func() (int, string, string)
		want bool
	}{
		{"nccl", func() (int, string, string) {
			return runCLI(t, headless.NCCLMain, "--host", "sim", "--model-config", "kimi-k2.5", "--tp", "8", "--batch", "1", "--tokens", "1")
		}, false},
		{"micro", func() (int, string, string) {
			return runCLI(t, headless.MicroMain, "--host", "sim", "--model-config", "kimi-k2.5", "--tp", "8", "--batch", "1", "--no-calib")
		}, false},
		{"load", func() (int, string, string) {
			return runCLI(t, headless.LoadMain, "--host", "sim", "--sim-load-time", "1s")
		}, false},
		{"sweep", func() (int, string, string) {
			return runCLI(t, headless.SweepMain, "--host", "sim", "--concurrency", "1", "--input-len", "8", "--metrics-url", "off")
		}, true},
	} {
		code, _, errs := c.main()
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", c.name, code, errs)
		}
		if got := strings.Contains(errs, note); got != c.want {
			t.Errorf("%s: says the quick settings %v, want %v:\n%s", c.name, got, c.want, errs)
		}
	}
}
