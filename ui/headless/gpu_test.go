package headless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/micro"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/ui/headless"
)

func TestMicroDryRun(t *testing.T) {
	var out, errb bytes.Buffer
	code := headless.MicroMain(context.Background(), []string{"--model-config", "kimi-k2.5", "--tp", "8", "--batch", "1", "--dry-run"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p model.Plan
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.TP != 8 || p.AllReduce.PerStep != 123 || len(p.At(1)) != 13 {
		t.Errorf("%+v", p)
	}
	errb.Reset()
	if code := headless.MicroMain(context.Background(), []string{"--model-config", "gpt-9", "--dry-run"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "gpt-9") {
		t.Errorf("unknown model: exit %d %s", code, errb.String())
	}
}

func TestMicroOnSimWritesJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := filepath.Join(t.TempDir(), "micro.json")
	var out, errb bytes.Buffer
	code := headless.MicroMain(ctx, []string{"--host", "sim", "--model-config", "qwen3-235b-a22b", "--tp", "8", "--batch", "1", "--no-calib", "--json", js}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "SIMULATED") || !strings.Contains(out.String(), "experts.w13") {
		t.Errorf("stdout %s\nstderr %s", out.String(), errb.String())
	}
	var rep micro.Report
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.GEMMs) != 6 || rep.Host != "sim" {
		t.Errorf("report %v %+v", err, rep)
	}
}

func TestNCCLDryRunAndErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := headless.NCCLMain(context.Background(), []string{"--model-config", "deepseek-v3", "--tp", "8", "--dry-run"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p model.Plan
	if err := json.Unmarshal(out.Bytes(), &p); err != nil || p.AllReduce.PerStep != 123 || p.AllToAll == nil {
		t.Errorf("%v %+v", err, p)
	}
	errb.Reset()
	if code := headless.NCCLMain(context.Background(), []string{"--model-config", "kimi-k2.5", "--batch", "1,x"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `"x"`) {
		t.Errorf("bad batch: exit %d %s", code, errb.String())
	}
}
