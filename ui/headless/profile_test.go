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

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/report"
	"github.com/profdeck/profdeck/ui/headless"
)

// parse profiler-table prints the documented JSON shape, for a table and
// for a gzipped trace alike.
func TestParseTableMainJSON(t *testing.T) {
	for _, f := range []string{"../../phases/profile/testdata/key_averages.txt", "../../phases/profile/testdata/trace.json.gz"} {
		code, out, errOut := runCLI(t, headless.ParseProfilerMain, f)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", f, code, errOut)
		}
		var got struct {
			Total      *float64           `json:"total_cuda_us"`
			Categories map[string]float64 `json:"categories"`
			Share      *float64           `json:"communication_share"`
			Top        []struct {
				Name     string   `json:"name"`
				SelfUs   *float64 `json:"self_cuda_us"`
				Calls    *int     `json:"calls"`
				Category string   `json:"category"`
			} `json:"top"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", f, err, out)
		}
		if got.Total == nil || *got.Total < 785.7 || *got.Total > 785.8 || got.Share == nil {
			t.Errorf("%s: total %v share %v", f, got.Total, got.Share)
		}
		for _, c := range []string{"gemm", "attention", "moe", "communication", "other"} {
			if _, ok := got.Categories[c]; !ok {
				t.Errorf("%s: no category %s", f, c)
			}
		}
		if len(got.Top) != 15 || got.Top[0].SelfUs == nil || got.Top[0].Calls == nil || got.Top[0].Category == "" {
			t.Errorf("%s: top = %+v", f, got.Top)
		}
	}
}

func TestParseTableMainErrors(t *testing.T) {
	if code, _, errOut := runCLI(t, headless.ParseProfilerMain, "../../phases/profile/testdata/nope.txt"); code != 2 || !strings.Contains(errOut, "../../phases/profile/testdata/nope.txt") {
		t.Errorf("missing file: exit %d, %q", code, errOut)
	}
	if code, _, _ := runCLI(t, headless.ParseProfilerMain); code != 2 {
		t.Errorf("no file: exit %d", code)
	}
	if code, _, errOut := runCLI(t, headless.ParseProfilerMain, "../../phases/profile/testdata/README"); code != 2 || !strings.Contains(errOut, "no key_averages table") {
		t.Errorf("not a table: exit %d, %q", code, errOut)
	}
}

// profdeck profile against the simulated deployment, headless, with --json.
func TestProfileMainSim(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "profdeck.yaml")
	if err := os.WriteFile(cfg, []byte("host: sim\nsim:\n  profiler_flush: 300ms\nmacro:\n  input_len: 16\n  output_len: 12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(dir, "out.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := headless.ProfileMain(ctx, []string{"-c", cfg, "--levels", "1,4", "--steps", "20", "--json", jsonPath}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"SIMULATED", "== C=1 ==", "== C=4 ==", "communication", "per decode step", "/step", "ncclDevKernel_AllReduce", "counted in the trace"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	for _, want := range []string{"stop_profile", "done in"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var levels []struct {
		Level      int                `json:"level"`
		Share      float64            `json:"communication_share"`
		Steps      int                `json:"decode_steps"`
		TraceSteps int                `json:"trace_steps"`
		PerStep    map[string]float64 `json:"per_step_us"`
		Sim        bool               `json:"simulated"`
	}
	if err := json.Unmarshal(b, &levels); err != nil {
		t.Fatal(err)
	}
	if len(levels) != 2 || levels[0].Level != 1 || levels[1].Level != 4 {
		t.Fatalf("json: %+v", levels)
	}
	for _, s := range levels {
		if s.Share < 0.3 || s.Share > 0.65 || s.Steps <= 0 || s.TraceSteps != s.Steps || len(s.PerStep) != 5 || !s.Sim {
			t.Errorf("json: %+v", s)
		}
	}
	// Without --levels, C=1 and the plateau of the campaign's journal.
	camp, err := campaign.LoadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, err := report.OpenJournal(camp.JournalPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(phases.New(time.Now(), phases.KindMacroPlateau, phases.Plateau{Concurrency: 4})); err != nil {
		t.Fatal(err)
	}
	j.Close()
	out.Reset()
	errb.Reset()
	if code := headless.ProfileMain(ctx, []string{"-c", cfg, "--steps", "10"}, &out, &errb); code != 0 ||
		!strings.Contains(errb.String(), "levels: C=1 and the plateau's C=4") || !strings.Contains(out.String(), "== C=4 ==") {
		t.Errorf("plateau from the journal: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	// A bad level is one clear line and exit 2, before any work.
	errb.Reset()
	if code := headless.ProfileMain(ctx, []string{"-c", cfg, "--levels", "1,x"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--levels") {
		t.Errorf("--levels 1,x: exit %d, %s", code, errb.String())
	}
}
