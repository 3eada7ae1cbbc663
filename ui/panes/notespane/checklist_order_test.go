package notespane

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases/campaignrun"
	"github.com/profdeck/profdeck/ui/panes/panetest"
)

// The checklist lists the steps of the order the campaign's run takes,
// with its loads: one for a campaign with a launch command, three for the
// classic order; each variant's one more.
func TestChecklistShowsTheOrderAndItsLoads(t *testing.T) {
	for _, tc := range []struct {
		order, head string
		restart     bool
		variants    []campaign.Variant
	}{
		{"", "Campaign steps · 0/9 done · 1 load(s)", false, nil},
		{"classic", "Campaign steps · 0/10 done · 3 load(s)", true, nil},
		{"", "Campaign steps · 0/9 done · 4 load(s)", false, campaign.DemoVariants()},
	} {
		d, _ := deps(t)
		d.Campaign = campaign.Demo(t.TempDir())
		d.Campaign.Run.Order = tc.order
		d.Campaign.Variants = tc.variants
		d.RunCampaign = func(context.Context) (*campaignrun.Result, error) { return &campaignrun.Result{}, nil }
		m := New(d)
		m.SetSize(80, 20)
		v := ansi.Strip(m.View())
		if !strings.Contains(v, tc.head) || !strings.Contains(v, "serve [load]") {
			t.Errorf("order %q: want %q and the serve marked as a load:\n%s", tc.order, tc.head, v)
		}
		if got := strings.Contains(v, "profiler restart [load]"); got != tc.restart {
			t.Errorf("order %q: the restart with the profiler shown %v, want %v:\n%s", tc.order, got, tc.restart, v)
		}
		panetest.Fits(t, m.View(), 80, 20)
	}
}
