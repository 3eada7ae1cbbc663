package headless_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/ui/headless"
)

func TestInitMain(t *testing.T) {
	t.Chdir(t.TempDir())
	if code, out, errOut := runCLI(t, headless.InitMain); code != 0 || !strings.Contains(out, "wrote profdeck.yaml") {
		t.Fatalf("init: %d %q %q", code, out, errOut)
	}
	c, err := campaign.LoadFile(campaign.DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	// Named after what it profiles (H200s), and the hint leads to run.
	if strings.Contains(strings.ToLower(c.Name), "b6000") || !strings.Contains(c.Name, "h200") {
		t.Errorf("the example campaign is named %q", c.Name)
	}
	if _, out, _ := runCLI(t, headless.InitMain, "--force"); !strings.Contains(out, "profdeck run -c profdeck.yaml") ||
		strings.Contains(out, "profdeck tui") {
		t.Errorf("init's closing hint: %q", out)
	}
	if code, _, errOut := runCLI(t, headless.InitMain); code != 1 || !strings.Contains(errOut, "already exists") ||
		!strings.Contains(errOut, "--force") {
		t.Fatalf("init over a file: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, headless.InitMain, "--force"); code != 0 {
		t.Fatalf("init --force: %d %s", code, errOut)
	}
	sub := filepath.Join("campaigns", "k25.yaml")
	if code, _, errOut := runCLI(t, headless.InitMain, sub); code != 0 {
		t.Fatalf("init %s: %d %s", sub, code, errOut)
	}
	if _, err := os.Stat(sub); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--bogus"}, {"a.yaml", "b.yaml"}} {
		if code, _, _ := runCLI(t, headless.InitMain, args...); code != 2 {
			t.Errorf("init %q: exit %d, want 2", args, code)
		}
	}
}
