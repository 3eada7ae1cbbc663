package headless_test

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/ui/headless"
)

// A GPU phase whose launcher ran nothing (`--python true`, `--torchrun
// true`: exit 0, no output) gave no result: exit 1, saying which flag to
// check, not exit 0 with empty tables.
func TestGPUPhaseWithNoResultExits1(t *testing.T) {
	for _, c := range []struct {
		main func() (int, string, string)
		flag string
	}{
		{func() (int, string, string) {
			return runCLI(t, headless.MicroMain, "--host", "local", "--python", "true", "--model-config", "qwen3-235b-a22b", "--tp", "1", "--batch", "1", "--no-calib", "--force")
		}, "--python"},
		{func() (int, string, string) {
			return runCLI(t, headless.NCCLMain, "--host", "local", "--torchrun", "true", "--model-config", "qwen3-235b-a22b", "--tp", "2", "--batch", "1", "--force")
		}, "--torchrun"},
	} {
		code, _, se := c.main()
		if code != headless.ExitCannotRun || !strings.Contains(se, "gave no result") || !strings.Contains(se, c.flag) {
			t.Errorf("%s true: exit %d, stderr:\n%s\nwant exit 1 saying no result", c.flag, code, se)
		}
	}
}
