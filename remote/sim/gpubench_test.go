package sim

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote"
)

func TestBenchScriptsOnSim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Without the uploads the shell's $(cat) fails like cat does.
	_, err = remote.Output(ctx, d, `python3 -c "$(cat /tmp/profdeck/profdeck-micro-x.py)" --plan "$(cat /tmp/profdeck/profdeck-micro-plan-x.json)"`)
	var ee *remote.ExitError
	if !errors.As(err, &ee) || !strings.Contains(ee.Stderr, "No such file") {
		t.Fatalf("missing upload: %v", err)
	}
	c, _ := model.Preset("llama-3.1-405b")
	p, _ := model.Build(c, model.Options{TP: 8, Batch: []int{1}})
	b, _ := json.Marshal(p)
	for path, data := range map[string][]byte{"/tmp/profdeck/profdeck-micro-x.py": []byte("#"), "/tmp/profdeck/profdeck-micro-plan-x.json": b} {
		if err := d.WriteFile(ctx, path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := remote.Output(ctx, d, `python3 -c "$(cat /tmp/profdeck/profdeck-micro-x.py)" --plan "$(cat /tmp/profdeck/profdeck-micro-plan-x.json)" --no-calib`)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct{ Type string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		types[v.Type]++
	}
	if types["gemm"] != 5 || types["step"] != 1 || types["calib"] != 0 || types["env"] != 1 {
		t.Errorf("line types %v", types)
	}
	// The all-reduce model: Kimi TP8 at M=1 is about half of a 12.5 ms TPOT.
	if ms := 123 * allReduceMicros(8, 14336) / 1e3; ms < 5.5 || ms > 7 {
		t.Errorf("burst %.2f ms", ms)
	}
	// The stop command is accepted.
	if _, err := remote.Output(ctx, d, `python3 -c 'import os,signal
ps=[4242]'`); err != nil {
		t.Errorf("kill: %v", err)
	}
}
