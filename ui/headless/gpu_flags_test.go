package headless

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/campaign"
)

func TestGPUFlagsFromCampaign(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "profdeck.yaml")
	yaml := "host: sim\nmodel:\n  name: deepseek-ai/DeepSeek-V3\n  tp: 4\nmicro:\n  batch: [2, 16]\n"
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	resolve := func(args ...string) (*campaign.Campaign, gpuSettings, error) {
		c, g := newGPUCommand("micro", "", io.Discard, io.Discard)
		if err := c.Parse(args); err != nil {
			t.Fatal(err)
		}
		return g.plan(c, microBinds, func(k *campaign.Campaign) []int { return k.Micro.Batch })
	}
	// The preset is guessed from the served model's name; flags left unset
	// take the campaign's values.
	camp, set, err := resolve("-c", p)
	if err != nil || camp.Host != "sim" || set.spec != "deepseek-v3" || set.opts.TP != 4 || !reflect.DeepEqual(set.opts.Batch, []int{2, 16}) {
		t.Errorf("%v: %+v", err, set)
	}
	// Flags win over the campaign.
	camp, set, err = resolve("-c", p, "--host", "local", "--tp", "8", "--model-config", "kimi-k2.5")
	if err != nil || camp.Host != "local" || set.opts.TP != 8 || set.spec != "kimi-k2.5" {
		t.Errorf("%v %+v", err, set)
	}
	// No model anywhere: a clear error naming the presets.
	os.Remove(p)
	_, _, err = resolve()
	if code := Code(t.Context(), err); code != ExitBadInput || !strings.Contains(err.Error(), "kimi-k2.5") {
		t.Errorf("no model: %d %v", code, err)
	}
}
