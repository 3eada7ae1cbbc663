package headless_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/report/campaign"
	"github.com/profdeck/profdeck/ui/headless"
)

func TestInitMain(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	if code := headless.InitMain(context.Background(), nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "wrote profdeck.yaml") {
		t.Fatalf("init: %d %q %q", code, out.String(), errb.String())
	}
	if _, err := campaign.LoadFile(campaign.DefaultPath); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := headless.InitMain(context.Background(), nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "already exists") ||
		!strings.Contains(errb.String(), "--force") {
		t.Fatalf("init over a file: %d %q", code, errb.String())
	}
	if code := headless.InitMain(context.Background(), []string{"--force"}, &out, &errb); code != 0 {
		t.Fatalf("init --force: %d %s", code, errb.String())
	}
	sub := filepath.Join("campaigns", "k25.yaml")
	if code := headless.InitMain(context.Background(), []string{sub}, &out, &errb); code != 0 {
		t.Fatalf("init %s: %d %s", sub, code, errb.String())
	}
	if _, err := os.Stat(sub); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--bogus"}, {"a.yaml", "b.yaml"}} {
		if code := headless.InitMain(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("init %q: exit %d, want 2", args, code)
		}
	}
}
