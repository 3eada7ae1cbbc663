package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/report"
)

const capacityUsage = `profdeck capacity [FILE] (--rate R | --users N --think-time D | --trace TRACE) [--slo SPEC] [--headroom 0.2]
                  [--tp N] [--pp N] [--nodes N] [-c FILE] [--json FILE|-]

How many replicas and GPUs serve this traffic within the SLO, planned from a
measured sweep. FILE is a ` + "`profdeck sweep --json`" + ` document or a campaign journal
(JOURNAL#N picks its Nth sweep); without it, the campaign's journal. The traffic
is a request rate, or users who each wait --think-time between an answer and
their next request (Little's law turns them into requests in flight), or a
trace's (Mooncake or Bailian JSONL, BurstGPT CSV) busiest minute. The SLO
is --slo, else the sweep's own; --headroom keeps that share of each replica's
SLO capacity free. One replica's GPUs are TP × PP × DP as the sweep recorded its
deployment (--tp, --pp, --nodes say otherwise). Every estimate (interpolation
between levels, the curve's end) is said in the warnings. The campaign's
capacity section gives the defaults. It reads the file it names (or the
campaign's journal) only: no --host, and no --jsonl. Exit 0, 1 when no
measured level met the SLO (no answer) or the document cannot be written, 2
for bad input.`

// capacityBinds are the capacity flags that set campaign keys.
var capacityBinds = []campaign.Flag{
	{Name: "rate", Key: "capacity.rate"}, {Name: "users", Key: "capacity.users"},
	{Name: "think-time", Key: "capacity.think_time"}, {Name: "slo", Key: "capacity.slo"},
	{Name: "headroom", Key: "capacity.headroom"},
}

// newCapacity makes the capacity command; resolve parses its arguments and
// gives the ask (the campaign's capacity section, the flags over it) and
// the file to read the sweep from.
func newCapacity(stdout, stderr io.Writer) (*Command, func(args []string) (report.CapacityAsk, string, error)) {
	c := newCommand("capacity", capacityUsage, stdout, stderr)
	c.flagCampaign()
	c.flagJSON()
	fs := c.Flags
	fs.Float64("rate", 0, "the traffic in requests per second")
	fs.Int("users", 0, "the traffic as users, each waiting --think-time between requests")
	fs.Duration("think-time", 0, "each user's pause between an answer and the next request, e.g. 30s")
	fs.String("slo", "", "the SLO, e.g. ttft=2s,tpot=50ms (default: the campaign's capacity.slo, else the sweep's)")
	fs.Float64("headroom", campaign.DefaultHeadroom, "share of each replica's SLO capacity kept free, 0 to below 1")
	tp := fs.Int("tp", 0, "one replica's tensor-parallel size (default: as the sweep recorded)")
	pp := fs.Int("pp", 0, "one replica's pipeline-parallel size (default: as the sweep recorded)")
	nodes := fs.Int("nodes", 0, "nodes one replica spans (default: as the sweep recorded)")
	trace := fs.String("trace", "", "the traffic as a trace's busiest minute: a Mooncake or Bailian JSONL, or a BurstGPT CSV")
	return c, func(args []string) (report.CapacityAsk, string, error) {
		pos, err := c.parseFiles(args, 0, 1)
		if err == nil {
			err = notAnInput(c, pos)
		}
		if err != nil {
			return report.CapacityAsk{}, "", err
		}
		camp, fromFile, err := c.Campaign(capacityBinds...)
		if err != nil {
			return report.CapacityAsk{}, "", err
		}
		file := ""
		switch {
		case len(pos) == 1:
			file = pos[0]
		case fromFile:
			file = camp.JournalPath()
		default:
			return report.CapacityAsk{}, "", BadInput("need a FILE (a sweep's --json document or a journal), or a campaign (-c FILE or ./%s) whose journal to read (see -h)", campaign.DefaultPath)
		}
		if *tp < 0 || *pp < 0 || *nodes < 0 {
			return report.CapacityAsk{}, "", BadInput("--tp, --pp and --nodes must not be negative")
		}
		ask := report.CapacityAsk{Rate: camp.Capacity.Rate, Users: camp.Capacity.Users, Think: camp.Capacity.ThinkTime.Duration,
			SLO: camp.Capacity.SLO, Headroom: camp.Capacity.Headroom}
		ask.TP, ask.PP, ask.Nodes = *tp, *pp, *nodes
		if *trace != "" {
			if c.Set("rate") || c.Set("users") {
				return report.CapacityAsk{}, "", BadInput("--trace: give a trace or --rate/--users, not both")
			}
			ask.Trace = *trace
			if ask.Rate, err = traceTraffic(c, *trace); err != nil {
				return report.CapacityAsk{}, "", err
			}
			ask.Users = 0
		}
		if err := ask.Check(); err != nil {
			return report.CapacityAsk{}, "", BadInput("%v", flagNamed(err))
		}
		return ask, file, nil
	}
}

// CapacityMain is "profdeck capacity": replicas and GPUs for a traffic.
func CapacityMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, resolve := newCapacity(stdout, stderr)
	ask, file, err := resolve(args)
	if err != nil {
		return c.Exit(ctx, err)
	}
	sw, err := loadSweep(c, file)
	if err != nil {
		return c.Exit(ctx, err)
	}
	plan, err := report.PlanCapacity(sw, ask)
	if err != nil {
		return c.Exit(ctx, &BadInputError{Err: err})
	}
	report.WriteCapacity(c.Human(), plan)
	err = c.WriteJSON(plan)
	if err == nil && plan.Replicas == nil {
		err = errors.New("no answer: " + strings.TrimPrefix(plan.Text, "no answer: "))
	}
	return c.Exit(ctx, err)
}

// flagNamed names the flag an ask's error is about (rate: → --rate:).
func flagNamed(err error) error {
	msg := err.Error()
	for _, k := range slices.Sorted(maps.Keys(askFlags)) {
		if rest, ok := strings.CutPrefix(msg, k+":"); ok {
			return fmt.Errorf("%s:%s", askFlags[k], rest)
		}
	}
	return err
}

var askFlags = map[string]string{"rate": "--rate", "users": "--users", "think time": "--think-time",
	"headroom": "--headroom", "slo": "--slo"}
