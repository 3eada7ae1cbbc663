package fleet

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
)

// Member is one agent: its name and where its on-host agent runs.
type Member struct {
	Name string
	Opt  onhost.Options
}

// RunClosed runs one closed-loop level of concurrency c over the members:
// each runs its share (SplitClosed) of c and of cfg.Requests, all started
// together, and sends its finished requests as histograms and counts,
// merged here (an agent lost mid-level keeps what it sent). When cfg.JSONL
// is set, each request's record comes back too, written there.
func RunClosed(ctx context.Context, cfg macro.Config, c int, members []Member) (Level, error) {
	return runClosed(ctx, cfg, c, members, nil, nil)
}

// runClosed is RunClosed with the operator's steering passed to the agents.
func runClosed(ctx context.Context, cfg macro.Config, c int, members []Member, st *steering, tk *ticker) (Level, error) {
	conc := SplitClosed(c, len(members))
	if c < len(members) {
		members, conc = members[:c], conc[:c] // an agent with no stream has no share
	}
	return runLevel(ctx, cfg, members, st, tk, func(i int, mc *macro.Config) {
		mc.Concurrency = []int{conc[i]}
		if macro.IsSessionDataset(cfg.Dataset) {
			shared(i, len(members), cfg, mc)
		}
	})
}

// RunOpen runs one open-loop level at rate req/s over the members, each
// at rate/N with its own seed: N independent Poisson processes of rate
// λ/N are one of rate λ.
func RunOpen(ctx context.Context, cfg macro.Config, rate float64, members []Member) (Level, error) {
	return runOpen(ctx, cfg, rate, members, nil, nil)
}

// runOpen is RunOpen with the operator's steering passed to the agents.
func runOpen(ctx context.Context, cfg macro.Config, rate float64, members []Member, st *steering, tk *ticker) (Level, error) {
	rates := SplitRate(rate, len(members))
	return runLevel(ctx, cfg, members, st, tk, func(i int, mc *macro.Config) {
		mc.Concurrency, mc.Rate = nil, rates[i]
		if Scheduled(cfg) {
			mc.Rate = rate
			shared(i, len(members), cfg, mc)
		}
	})
}

// Scheduled reports whether an open loop's arrivals are made once and
// dealt to the agents (gamma or constant arrivals, a trace, multi-turn
// sessions) rather than split as λ/N independent Poisson processes.
func Scheduled(cfg macro.Config) bool {
	poisson := (cfg.Arrivals == "" || cfg.Arrivals == macro.ArrivalsPoisson) && (cfg.Burstiness == 0 || cfg.Burstiness == 1)
	return !poisson || macro.IsTraceFormat(cfg.Dataset) || macro.IsSessionDataset(cfg.Dataset)
}

// shared makes agent i of n send its share of the one schedule: every
// agent makes it with the sweep's seed and keeps its arrivals and
// sessions (macro.Config.Shard).
func shared(i, n int, cfg macro.Config, mc *macro.Config) {
	mc.Seed, mc.Shard, mc.Shards = cfg.Seed, i, n
}

// runLevel starts every member's share at once and merges what came back.
// tk, when set, emits the level's ticks while it runs.
func runLevel(ctx context.Context, cfg macro.Config, members []Member, st *steering, tk *ticker, share func(int, *macro.Config)) (Level, error) {
	n := len(members)
	reqs := SplitClosed(cfg.Requests, n)
	agents := make([]AgentLevel, n)
	sinks := make([]*sink, n)
	offsets := measureAll(ctx, members)
	g := newGate(n)
	st.agents(n)
	var fwd *lockedWriter
	if cfg.JSONL != nil {
		fwd = &lockedWriter{w: cfg.JSONL}
	}
	var wg sync.WaitGroup
	for i, m := range members {
		sinks[i] = &sink{}
		mc := cfg
		mc.Requests, mc.Seed = reqs[i], cfg.Seed+int64(i)
		mc.GPU = nil // the agents' hosts are not the GPU host
		if fwd != nil {
			mc.JSONL = &lineWriter{to: fwd} // the records too, when the sweep writes them
		}
		m.Opt.OnBatch = sinks[i].batch
		share(i, &mc)
		agents[i] = AgentLevel{Host: m.Name, Offset: offsets[i]}
		m.Opt.AwaitStart, m.Opt.OnReady = true, g.ready(i)
		m.Opt.OnStarted = func(t time.Time) { sinks[i].started(offsets[i].ToCoordinator(t).Sub(g.startTime())) }
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer g.ready(i)() // an agent gone before it was ready holds no one back
			em, done := tk.agentEvents(ctx, i, sinks[i])
			defer done()
			runOne(ctx, i, mc, m, sinks[i], &agents[i], g, st, em)
		}()
	}
	go g.open()
	stop, ticked := make(chan struct{}), make(chan struct{})
	go func() { defer close(ticked); tk.run(ctx, sinks, stop) }()
	wg.Wait()
	close(stop)
	<-ticked
	sent := 0
	for _, s := range sinks {
		sent += int(s.b.InWindow)
	}
	lv, err := Merge(agents)
	lv.Pcts = cfg.Percentiles
	if ctx.Err() != nil {
		lv.Partial, lv.Stopped = true, true
	}
	if cfg.Duration > 0 {
		lv.DeliveredRate = float64(sent) / cfg.Duration.Seconds()
	}
	return lv, err
}

// exitStatus ends the part of an agent's error worth saying: what follows
// it is the command line the agent was started with.
var exitStatus = regexp.MustCompile(`exited with status \d+`)

// lostWhy is the one line said of a lost agent.
func lostWhy(err error) string {
	s := strings.SplitN(err.Error(), "\n", 2)[0]
	if loc := exitStatus.FindStringIndex(s); loc != nil {
		s = s[:loc[1]]
	}
	return firstN(s, 200)
}

// StartLead is how far ahead of the last agent's readiness a level's
// start is set: time for the start to reach every agent.
var StartLead = 300 * time.Millisecond

// gate starts a level's agents at one time, once every one is ready (or
// gone): each is told the start in its own clock.
type gate struct {
	mu    sync.Mutex
	sws   map[*AgentLevel]*onhost.Sweep
	order []*AgentLevel
	wg    sync.WaitGroup
	once  []sync.Once
	start time.Time // the level's start, on the coordinator's clock
}

func newGate(n int) *gate {
	g := &gate{sws: map[*AgentLevel]*onhost.Sweep{}, once: make([]sync.Once, n)}
	g.wg.Add(n)
	return g
}

func (g *gate) set(a *AgentLevel, sw *onhost.Sweep) {
	g.mu.Lock()
	g.sws[a] = sw
	g.order = append(g.order, a)
	g.mu.Unlock()
}

// ready is agent i's readiness, said once.
func (g *gate) ready(i int) func() {
	return func() { g.once[i].Do(g.wg.Done) }
}

func (g *gate) startTime() time.Time { g.mu.Lock(); defer g.mu.Unlock(); return g.start }

// open waits for every agent, then sends each the start in its clock.
func (g *gate) open() {
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.start = time.Now().Add(StartLead)
	for _, a := range g.order {
		g.sws[a].Start(a.Offset.ToAgent(g.start))
	}
}

// measureAll measures each member's clock offset, all at once.
func measureAll(ctx context.Context, members []Member) []Offset {
	out := make([]Offset, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		if m.Opt.Host == nil {
			continue
		}
		wg.Go(func() { out[i], _ = Measure(HostProbe(ctx, m.Opt.Host), 5) })
	}
	wg.Wait()
	return out
}

// runOne runs one member's share and fills in what it sent.
// em, when set, takes the agent's own events.
func runOne(ctx context.Context, i int, cfg macro.Config, m Member, s *sink, a *AgentLevel, g *gate, st *steering, em *phases.Emitter) {
	sw, err := onhost.New(cfg, m.Opt)
	var res *macro.Result
	if err == nil {
		g.set(a, sw)
		st.add(i, sw)
		res, err = sw.Run(ctx, em)
	}

	if err != nil && ctx.Err() == nil {
		a.Lost = lostWhy(err)
	}
	if res != nil && len(res.Levels) > 0 {
		a.Level = &res.Levels[len(res.Levels)-1]
		a.Audit = auditOf(*a.Level)
	}
	a.Result = res
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Seconds = s.seconds
	a.OK, a.Failed, a.Tokens = s.b.OK, s.b.Failed, s.b.Tokens
	a.Duration = time.Duration((s.b.Last - s.b.First) * float64(time.Second))
	a.Start, a.StartKnown = s.start, s.startKnown
}

func auditOf(l phases.LevelResult) Audit {
	a := Audit{P99SendLagms: l.P99SendLagms, EventsPerRead: l.EventsPerRead, ClientBound: l.ClientBound, Reason: l.ClientBoundReason}
	if l.DurationS > 0 {
		a.CPUFraction = l.ClientCPUs / l.DurationS
	}
	return a
}
