package campaign

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A flag given wins over the file whatever its value, 0, "" and false
// included; a flag not given leaves the file's value.
func TestApplyFlagsZeroValuesWin(t *testing.T) {
	c, err := Parse([]byte("macro:\n  warmup: 7\n  prefix_len: 16\n  stop_at_plateau: true\n  slo: ttft=2s\n  rate: 3\n  duration: 1m\n  requests: 9\nsim:\n  fail: oom\nhost: sim\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("warmup", 5, "")
	fs.Int("prefix-len", 3, "")
	fs.Bool("stop-at-plateau", true, "")
	fs.String("slo", "x", "")
	fs.Float64("rate", 1, "")
	fs.Duration("duration", 0, "")
	fs.String("sim-fail", "", "")
	fs.Int("unbound", 0, "")
	if err := fs.Parse([]string{"--warmup", "0", "--prefix-len=0", "--stop-at-plateau=false", "--slo", "", "--rate", "0", "--duration", "30s", "--unbound", "4"}); err != nil {
		t.Fatal(err)
	}
	err = c.ApplyFlags(fs, Flag{"warmup", "macro.warmup"}, Flag{"prefix-len", "macro.prefix_len"}, Flag{"stop-at-plateau", "macro.stop_at_plateau"},
		Flag{"slo", "macro.slo"}, Flag{"rate", "macro.rate"}, Flag{"duration", "macro.duration"}, Flag{"sim-fail", "sim.fail"})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Macro
	if m.Warmup != 0 || m.PrefixLen != 0 || m.StopAtPlateau || m.SLO != "" || m.Rate != 0 || m.Duration.Duration != 30*time.Second {
		t.Errorf("flags given did not win: %+v", m)
	}
	if m.Requests != 0 {
		t.Errorf("--duration alone keeps the file's request count %d", m.Requests)
	}
	if c.Sim.Fail != "oom" {
		t.Errorf("a flag not given changed sim.fail to %q", c.Sim.Fail)
	}
	if errs := c.Validate(); len(errs) != 0 {
		t.Errorf("valid campaign: %v", errs)
	}
	if c.Source("macro.warmup") != "--warmup" || c.Source("sim.fail") != "line 10" || c.Source("macro.api") != "" {
		t.Errorf("sources %q %q %q", c.Source("macro.warmup"), c.Source("sim.fail"), c.Source("macro.api"))
	}
}

// Validation names the flag that set a bad value, else the file's line
// and key, else the key; it lists every problem.
func TestValidateNamesFlagOrLine(t *testing.T) {
	c, err := Parse([]byte("\nmacro:\n  warmup: 2\n  concurrency: [1, 8]\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("warmup", 0, "")
	fs.String("concurrency", "", "")
	fs.Int("tp", 0, "")
	if err := fs.Parse([]string{"--warmup", "-1", "--tp", "0"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(fs, Flag{"warmup", "macro.warmup"}, Flag{"tp", "model.tp"}); err != nil {
		t.Fatal(err)
	}
	c.Macro.Concurrency = []int{1, 0}
	c.Profile.Steps = 0
	var got []string
	for _, e := range c.Validate() {
		got = append(got, e.Error())
	}
	want := []string{
		"--tp: must be at least 1, got 0",
		"line 4: macro.concurrency: 0 is less than 1",
		"--warmup: must not be negative, got -1",
		"profile.steps: want 1 to 100000 engine steps per window, got 0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := c.Check(); err == nil || !strings.HasSuffix(err.Error(), "(and 3 more: line 4: macro.concurrency, --warmup, profile.steps)") {
		t.Errorf("Check: %v", err)
	}
}

// A value a flag cannot hold for its key is an error naming the flag.
func TestApplyFlagsBadText(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("concurrency", "", "")
	if err := fs.Parse([]string{"--concurrency", "1,x"}); err != nil {
		t.Fatal(err)
	}
	err := Defaults().ApplyFlags(fs, Flag{"concurrency", "macro.concurrency"})
	if err == nil || !strings.HasPrefix(err.Error(), "--concurrency: ") {
		t.Errorf("err %v", err)
	}
	if err := Defaults().SetKey("macro.nope", "1"); err == nil {
		t.Error("an unknown key was set")
	}
}
