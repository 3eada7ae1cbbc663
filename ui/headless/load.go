package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load"
	"github.com/profdeck/profdeck/phases/load/diagnose"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote/hosts"
)

// loadFlags are the `profdeck load` options beyond the shared ones.
type loadFlags struct {
	every time.Duration
}

// LoadMain is `profdeck load`: follow a load until ready (exit 0), failed
// or stalled (exit 3, the reason on stderr), printing a status line every
// few seconds; --jsonl writes the events and states as they come, --json
// the ending.
func LoadMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, f := newLoad(stdout, stderr)
	if err := c.Parse(args); err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, followLoad(ctx, c, f))
}

// newLoad is the load command with its flags.
func newLoad(stdout, stderr io.Writer) (*Command, *loadFlags) {
	c := New("load", "profdeck load [-c FILE | --host HOST --log PATH --url URL] [--expect-gib N] [--stall-after D] [--json FILE|-] [--jsonl FILE]", stdout, stderr)
	f := &loadFlags{}
	fs := c.Flags
	// The flags bound to campaign keys (loadBinds) are read from the flag
	// set; their defaults are the campaign's.
	fs.String("log", "", "the server's log file on the host (default: the campaign's server.log, else "+campaign.DefaultLogPath+")")
	fs.String("url", "", "the server's URL as seen from the host (default: the campaign's server.url)")
	fs.Float64("expect-gib", 0, "expected weights per GPU in GiB (default: the campaign's model.expect_gib; 0: from the log)")
	fs.Duration("stall-after", 0, "no progress for this long is a stall (default: the campaign's load.stall_after, else 5m; 5× the seconds per shard when longer)")
	fs.Duration("poll", 0, "nvidia-smi and /health period (default: the campaign's load.poll_interval)")
	fs.DurationVar(&f.every, "every", 5*time.Second, "status line period")
	fs.Duration("sim-load-time", 0, "host sim only: how long the simulated load takes (default: the campaign's sim.load_time, else 60s; more than 0)")
	fs.Float64("sim-stall-at", 0, "host sim only: the simulated load stalls at this many GiB per GPU")
	fs.String("sim-fail", "", "host sim only: the simulated load fails with oom or nccl")
	fs.String("engine", "", "the serving engine: vllm, sglang or auto (default: the campaign's server.engine, else auto: told from the log)")
	return c, f
}

// loadBinds are the load command's flags that set campaign keys.
var loadBinds = []campaign.Flag{
	{Name: "log", Key: "server.log"}, {Name: "url", Key: "server.url"},
	{Name: "expect-gib", Key: "model.expect_gib"}, {Name: "stall-after", Key: "load.stall_after"},
	{Name: "poll", Key: "load.poll_interval"}, {Name: "sim-load-time", Key: "sim.load_time"},
	{Name: "sim-stall-at", Key: "sim.stall_at_gib"}, {Name: "sim-fail", Key: "sim.fail"},
	{Name: "engine", Key: "server.engine"},
}

// plan is the load's configuration: the campaign with the flags given
// applied over it and checked.
func (f *loadFlags) plan(c *Command) (load.Config, *campaign.Campaign, error) {
	camp, fromFile, err := c.Campaign(loadBinds...)
	if err != nil {
		return load.Config{}, nil, err
	}
	if !fromFile && !c.Set("host") {
		return load.Config{}, nil, BadInput("give -c FILE, or --host HOST (with --log and --url), or run where %s is", campaign.DefaultPath)
	}
	if f.every <= 0 {
		return load.Config{}, nil, BadInput("--every: must be more than 0, got %s", f.every)
	}
	if c.Set("log") {
		camp.Server.Logs = nil // --log is every node's
	}
	return camp.LoadConfig(), camp, nil
}

func followLoad(ctx context.Context, c *Command, f *loadFlags) error {
	cfg, camp, err := f.plan(c)
	if err != nil {
		return err
	}
	hs, err := c.OpenNodes(ctx, camp, func(o *hosts.Options) {
		// Nothing launches the simulated server in a headless follow: it
		// loads on its own.
		o.Sim.AutoStart = true
	})
	if err != nil {
		return err
	}
	defer hosts.CloseAll(hs)
	cfg.Host = hs[0]
	events := make(chan phases.Event, 256)
	type result struct {
		end load.Ending
		err error
	}
	done := make(chan result, 1)
	go func() {
		em := &phases.Emitter{Out: events}
		if len(hs) == 1 {
			end, err := load.NewWatcher(cfg).Until(ctx, em)
			done <- result{end, err}
			return
		}
		var nodes []load.Node
		for i, h := range hs {
			nodes = append(nodes, load.Node{Host: h, LogPath: camp.NodeLog(i)})
		}
		end, err := load.NewGroup(cfg, nodes).Until(ctx, em)
		done <- result{end, err}
	}()
	p := &printer{c: c, out: c.Human(), every: f.every, states: map[string]*phases.LoadState{}}
	if len(hs) > 1 {
		p.head = hs[0].Name()
		for _, h := range hs {
			p.hosts = append(p.hosts, h.Name())
		}
	}
	for {
		select {
		case ev := <-events:
			p.event(ev)
		case r := <-done:
			for len(events) > 0 {
				p.event(<-events)
			}
			return p.finish(r.end, r.err)
		}
	}
}

// printer writes the headless `load` command's output.
type printer struct {
	c         *Command
	out       io.Writer
	every     time.Duration
	state     *phases.LoadState            // the head's
	states    map[string]*phases.LoadState // every node's, by host
	head      string                       // the head's host when several nodes are followed
	hosts     []string                     // in the order first seen
	lastLine  map[string]time.Time         // the last status line printed, per node
	lastState time.Time                    // the last state written to --jsonl
	stalls    map[string]*phases.Stall     // each node's stall, by host ("" for one node)
}

func (p *printer) event(ev phases.Event) {
	p.jsonl(ev)
	stamp := ev.Time.Format("15:04:05")
	switch d := ev.Data.(type) {
	case phases.LoadState:
		p.nodeState(d)
		if ev.Time.Sub(p.lastLine[d.Host]) >= p.every {
			p.lastLine[d.Host] = ev.Time
			fmt.Fprintf(p.out, "%s %s%s\n", stamp, p.nodePrefix(d.Host), load.StatusLine(d))
		}
	case phases.Milestone:
		fmt.Fprintf(p.out, "%s %s%s (at %s)\n", stamp, p.nodePrefix(d.Node), load.MilestoneText(d), units.Duration(d.AtS))
	case phases.LoadFailure:
		fmt.Fprintf(p.out, "%s %sFAILED: %s%s\n", stamp, p.nodePrefix(d.Node), load.FailureText(&d), tailText(d.Tail, "         | "))
	case phases.Stall:
		if p.stalls == nil {
			p.stalls = map[string]*phases.Stall{}
		}
		p.stalls[d.Node] = &d
		fmt.Fprintf(p.out, "%s %s\n", stamp, load.StallText(&d))
	case phases.Diagnosis:
		for _, l := range diagnose.Lines(d) {
			fmt.Fprintf(p.out, "%s %s%s\n", stamp, p.nodePrefix(d.Node), l)
		}
	case phases.ServerEvent:
		fmt.Fprintf(p.out, "%s server %s: %s\n", stamp, d.Action, d.Detail)
	case phases.ErrorEvent:
		fmt.Fprintf(p.out, "%s error: %s: %s\n", stamp, d.Where, d.Err)
	case phases.LogLine:
		if d.Level == "NOTE" {
			fmt.Fprintf(p.out, "%s %snote: %s\n", stamp, p.nodePrefix(d.Node), d.Text)
		}
	}
}

// jsonl writes the events to --jsonl: not the per-poll GPU samples (the
// state carries them) nor log lines (they are for the cockpit), and a state
// once per status period.
func (p *printer) jsonl(ev phases.Event) {
	switch ev.Kind {
	case phases.KindLoadGPU, phases.KindLoadLog:
		return
	case phases.KindLoadState:
		if ev.Time.Sub(p.lastState) < p.every {
			return
		}
		p.lastState = ev.Time
	}
	p.c.WriteLine(ev)
}

// nodeState keeps a node's latest state; the first node seen is the head
// (the head's is the document's state).
func (p *printer) nodeState(d phases.LoadState) {
	if p.lastLine == nil {
		p.lastLine = map[string]time.Time{}
	}
	if !slices.Contains(p.hosts, d.Host) {
		p.hosts = append(p.hosts, d.Host)
	}
	p.states[d.Host] = &d
	if p.head == "" || p.head == d.Host {
		p.state = &d
	}
}

// nodePrefix is "HOST: " when the load spans several nodes.
func (p *printer) nodePrefix(host string) string {
	if host == "" || p.head == "" {
		return ""
	}
	return host + ": "
}

// loadEnding is the --json document and the last --jsonl line.
type loadEnding struct {
	Ending    string            `json:"ending"`
	Reason    string            `json:"reason"`
	State     *phases.LoadState `json:"state"` // the head's
	Diagnosis *phases.Diagnosis `json:"diagnosis"`
	// Nodes are every node's state (several nodes only); GPUs every GPU
	// of every node, each with its host.
	Nodes []*phases.LoadState `json:"nodes,omitempty"`
	GPUs  []phases.GPULoad    `json:"gpus"`
}

func (p *printer) finish(end load.Ending, err error) error {
	if end.Kind == load.EndStalled {
		p.stalled()
	}
	doc := loadEnding{Ending: end.Kind, Reason: end.Reason, State: p.state, Diagnosis: end.Diagnosis, GPUs: []phases.GPULoad{}}
	for _, h := range p.hosts {
		st := p.states[h]
		if st == nil {
			continue
		}
		fmt.Fprintf(p.out, "%s %s%s\n", time.Now().Format("15:04:05"), p.nodePrefix(h), load.StatusLine(*st))
		doc.GPUs = append(doc.GPUs, st.GPUs...)
		if p.head != "" {
			doc.Nodes = append(doc.Nodes, st)
		}
	}
	p.c.WriteLine(doc)
	if werr := p.c.WriteJSON(doc); werr != nil {
		return werr
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted before the load ended: %w", err)
		}
		return err
	}
	if end.Kind == load.EndReady {
		fmt.Fprintf(p.out, "ready: %s\n", end.Reason)
		return nil
	}
	return &StepFailedError{Err: fmt.Errorf("%s: %s", end.Kind, end.Reason)}
}

// stalled makes the states the ending reports say the stall it ends on:
// the last poll came before the stall was declared, so it still had its
// rates and ETAs. A stalled load has none (the README: no ETA while
// stalled), its stall is in its state, and nothing moved for the stall's
// time.
func (p *printer) stalled() {
	for h, st := range p.states {
		sd := p.stalls[h]
		if sd == nil && len(p.states) == 1 {
			for _, x := range p.stalls {
				sd = x
			}
		}
		if sd == nil {
			continue
		}
		c := *st
		c.Stall, c.ShardETA, c.IdleS = sd, 0, max(c.IdleS, sd.ForS)
		c.GPUs = slices.Clone(st.GPUs)
		for i := range c.GPUs {
			c.GPUs[i].ETASeconds, c.GPUs[i].RateGiBMin = 0, 0
		}
		p.states[h] = &c
		if st == p.state {
			p.state = &c
		}
	}
}
