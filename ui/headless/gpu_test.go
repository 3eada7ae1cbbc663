package headless_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/ui/headless"
)

func TestMicroDryRun(t *testing.T) {
	code, out, errOut := runCLI(t, headless.MicroMain, "--model-config", "kimi-k2.5", "--tp", "8", "--batch", "1", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p model.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.TP != 8 || p.AllReduce.PerStep != 123 || len(p.At(1)) != 13 {
		t.Errorf("%+v", p)
	}
	if code, _, errOut := runCLI(t, headless.MicroMain, "--model-config", "gpt-9", "--dry-run"); code != 2 || !strings.Contains(errOut, "gpt-9") {
		t.Errorf("unknown model: exit %d %s", code, errOut)
	}
}

func TestMicroOnSimWritesJSON(t *testing.T) {
	js := filepath.Join(t.TempDir(), "micro.json")
	code, out, errOut := runCLI(t, headless.MicroMain, "--host", "sim", "--model-config", "qwen3-235b-a22b", "--tp", "8", "--batch", "1", "--no-calib", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "SIMULATED") || !strings.Contains(out, "experts.w13") {
		t.Errorf("stdout %s\nstderr %s", out, errOut)
	}
	var rep micro.Report
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.GEMMs) != 6 || rep.Host != "sim" {
		t.Errorf("report %v %+v", err, rep)
	}
}

func TestNCCLDryRunAndErrors(t *testing.T) {
	code, out, errOut := runCLI(t, headless.NCCLMain, "--model-config", "deepseek-v3", "--tp", "8", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p model.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.AllReduce.PerStep != 123 || p.AllToAll == nil {
		t.Errorf("%v %+v", err, p)
	}
	if code, _, errOut := runCLI(t, headless.NCCLMain, "--model-config", "kimi-k2.5", "--batch", "1,x"); code != 2 || !strings.Contains(errOut, `"x"`) {
		t.Errorf("bad batch: exit %d %s", code, errOut)
	}
}
