package headless

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestGPUFlagsFromCampaign(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "profdeck.yaml")
	yaml := "host: sim\nmodel:\n  name: deepseek-ai/DeepSeek-V3\n  tp: 4\nmicro:\n  batch: [2, 16]\n"
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	resolve := func(args ...string) (*Command, *gpuFlags, error) {
		c, g := newGPUCommand("micro", "", io.Discard, io.Discard)
		if err := c.Parse(args); err != nil {
			t.Fatal(err)
		}
		camp, fromFile, err := c.Campaign()
		if err != nil {
			t.Fatal(err)
		}
		return c, g, g.resolve(camp, fromFile, camp.Micro.Batch)
	}
	// The preset is guessed from the served model's name; flags left unset
	// take the campaign's values.
	c, g, err := resolve("-c", p)
	camp, _, _ := c.Campaign()
	if err != nil || c.Host(camp) != "sim" || g.model != "deepseek-v3" || g.tp != 4 || !reflect.DeepEqual([]int(g.batch), []int{2, 16}) {
		t.Errorf("%v: host %s model %s tp %d batch %v", err, c.Host(camp), g.model, g.tp, g.batch)
	}
	// Flags win over the campaign.
	c, g, err = resolve("-c", p, "--host", "local", "--tp", "8", "--model-config", "kimi-k2.5")
	if err != nil || c.Host(camp) != "local" || g.tp != 8 || g.model != "kimi-k2.5" {
		t.Errorf("%v %+v", err, g)
	}
	// No model anywhere: a clear error naming the presets.
	_, _, err = resolve()
	if code := Code(t.Context(), err); code != ExitBadInput || !strings.Contains(err.Error(), "kimi-k2.5") {
		t.Errorf("no model: %d %v", code, err)
	}
}
