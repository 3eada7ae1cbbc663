package gpubench

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/report/campaign"
)

func TestParseInts(t *testing.T) {
	if v, err := ParseInts(" 1, 8,64 ,"); err != nil || !reflect.DeepEqual(v, []int{1, 8, 64}) {
		t.Errorf("%v %v", v, err)
	}
	for _, bad := range []string{"", "0", "1,-2", "x"} {
		if _, err := ParseInts(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestResolveFromCampaign(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "profdeck.yaml")
	yaml := "host: sim\nmodel:\n  name: deepseek-ai/DeepSeek-V3\n  tp: 4\nmicro:\n  batch: [2, 16]\n"
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var c Common
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Register(fs)
	if err := fs.Parse([]string{"-c", p}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Resolve(func(k *campaign.Campaign) []int { return k.Micro.Batch })
	if err != nil {
		t.Fatal(err)
	}
	// The preset is guessed from the served model's name; flags left unset
	// take the campaign's values.
	if r.HostSpec != "sim" || c.Model != "deepseek-v3" || c.TP != 4 || !reflect.DeepEqual([]int(c.Batch), []int{2, 16}) {
		t.Errorf("host %s model %s tp %d batch %v", r.HostSpec, c.Model, c.TP, c.Batch)
	}
	// Flags win over the campaign.
	var c2 Common
	fs2 := flag.NewFlagSet("x", flag.ContinueOnError)
	c2.Register(fs2)
	_ = fs2.Parse([]string{"-c", p, "--host", "local", "--tp", "8", "--model-config", "kimi-k2.5"})
	r2, err := c2.Resolve(nil)
	if err != nil || r2.HostSpec != "local" || c2.TP != 8 || c2.Model != "kimi-k2.5" {
		t.Errorf("%v %+v %+v", err, r2, c2)
	}
	// No model anywhere: a clear error naming the presets.
	var c3 Common
	_, err = c3.Resolve(nil)
	if err == nil || !strings.Contains(err.Error(), "kimi-k2.5") {
		t.Errorf("no model: %v", err)
	}
}
