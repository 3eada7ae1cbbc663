package headless

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/campaignrun"
)

// The plan before the run counts each variant still to serve as a load,
// with its load's and sweep's time; a variant the journal finished is
// not served again and not counted.
func TestRunPlanCountsTheVariants(t *testing.T) {
	c := campaign.Demo(t.TempDir())
	c.Variants = campaign.DemoVariants()
	c.Sim.LoadTime.Duration = 20 * time.Second
	cfg := campaignrun.Config{Variants: c.VariantSpecs(), Order: c.RunOrder()}
	var b strings.Builder
	runPlan(&b, c, cfg)
	plain := runPlanLoads(t, c, campaignrun.Config{Order: c.RunOrder()})
	load, sweep := c.Sim.LoadTime.Duration, time.Duration(len(c.Macro.Concurrency))*c.Macro.Duration.Duration
	if load == 0 || sweep == 0 {
		t.Fatalf("the demo campaign has no load time (%v) or sweep time (%v)", load, sweep)
	}
	want := plain.loads + 3
	if !strings.Contains(b.String(), "profdeck run: "+itoa(want)+" load(s); expected "+shortDur(plain.total+3*(load+sweep))) {
		t.Errorf("want %d loads and %s more than without variants (%d, %s):\n%s", want, shortDur(3*(load+sweep)), plain.loads, shortDur(plain.total), b.String())
	}
	if !strings.Contains(b.String(), "chunked: serve [load] ~"+shortDur(load)+", macro ~"+shortDur(sweep)+" → notebook") {
		t.Errorf("the plan does not list the variants before the notebook:\n%s", b.String())
	}
	// The first variant finished in the journal: two to serve.
	cfg.Prior = []phases.Event{{Kind: phases.KindVariantFinished, Data: phases.VariantFinished{Name: cfg.Variants[0].Name, State: phases.StepDone}}}
	b.Reset()
	runPlan(&b, c, cfg)
	if !strings.Contains(b.String(), "profdeck run: "+itoa(plain.loads+2)+" load(s)") || strings.Contains(b.String(), cfg.Variants[0].Name+": serve") {
		t.Errorf("a finished variant is planTotals again:\n%s", b.String())
	}
}

type planTotals struct {
	loads int
	total time.Duration
}

// runPlanLoads reads the loads and time of the plan's second line.
func runPlanLoads(t *testing.T, c *campaign.Campaign, cfg campaignrun.Config) planTotals {
	t.Helper()
	var b strings.Builder
	runPlan(&b, c, cfg)
	var p planTotals
	var dur string
	for _, line := range strings.Split(b.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "profdeck run: "); ok && strings.Contains(rest, " load(s); expected ") {
			if _, err := fmtSscanf(rest, "%d load(s); expected %s", &p.loads, &dur); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		}
	}
	d, err := time.ParseDuration(dur)
	if err != nil {
		t.Fatalf("plan %q: %v", b.String(), err)
	}
	p.total = d
	return p
}

func itoa(n int) string { return fmt.Sprint(n) }

var fmtSscanf = fmt.Sscanf

// The line after the steps table counts each variant's load and its time:
// the baseline's serve and two variants', the failed one too.
func TestRunTookCountsTheVariantsLoads(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	step := func(name, variant, state string, from, to int) campaignrun.StepResult {
		return campaignrun.StepResult{Name: name, Variant: variant, State: state,
			Started: at.Add(time.Duration(from) * time.Second), Finished: at.Add(time.Duration(to) * time.Second)}
	}
	res := &campaignrun.Result{Steps: []campaignrun.StepResult{
		step(campaignrun.Serve, "", phases.StepDone, 0, 10), step(campaignrun.Macro, "", phases.StepDone, 10, 60),
		step(campaignrun.Serve, "cap64", phases.StepDone, 60, 70), step(campaignrun.Macro, "cap64", phases.StepDone, 70, 120),
		step(campaignrun.Serve, "broken", phases.StepFailed, 120, 125), step(campaignrun.Notebook, "", phases.StepDone, 125, 126),
	}}
	var b strings.Builder
	runTook(&b, res)
	if b.String() != "wall time 2m6s, 3 load(s)\n" {
		t.Errorf("got %q", b.String())
	}
	if tab := StepsTable(res); !strings.Contains(tab, "cap64: serve") || !strings.Contains(tab, "broken: serve") {
		t.Errorf("the steps table does not name the variants:\n%s", tab)
	}
}
