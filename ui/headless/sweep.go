package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gputel"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/localfs"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

// sweepFlags are the sweep's own flags; unset ones take the campaign's
// server and macro sections.
type sweepFlags struct {
	model, apiKey, simMode string
	pctMetrics, pcts       string // vLLM's --percentile-metrics, --metric-percentiles
	timeout                time.Duration
	seed                   int64
	emu                    vllmemu.Config // the simulated server, as --sim-mode asks
	vllm                   *vllmArgs      // what a vllm bench serve line asked besides the sweep's flags
}

// SweepMain is `profdeck sweep`: a headless concurrency sweep through the
// host (so a server bound to an SSH host's localhost is reached over the
// SSH connection, as the cockpit does). Progress goes to stderr, one line
// per finished level; --json writes the result document (also after an
// interrupt), --jsonl appends one line per finished request as it goes.
func SweepMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, f := newSweep(stdout, stderr)
	args, v, err := vllmLine(c.Flags, datasetArgs(args))
	if err != nil {
		return c.Exit(ctx, err)
	}
	f.vllm = v
	for _, line := range v.ignored {
		fmt.Fprintln(stderr, line)
	}
	if err := c.Parse(args); err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, runSweep(ctx, c, f))
}

// newSweep is the sweep command with its flags. Those bound to campaign
// keys (sweepBinds) are read from the flag set, over the campaign; their
// defaults are the campaign's.
func newSweep(stdout, stderr io.Writer) (*Command, *sweepFlags) {
	c := New("sweep", "profdeck sweep [-c FILE] [--host HOST] [--url URL] [--model NAME] [--api completions|chat]\n"+
		"       [--concurrency 1,2,4] [--requests N] [--duration D] [--warmup N] [--input-len N] [--output-len N]\n"+
		"       [--dataset sharegpt|jsonl FILE [--dataset-max N] | --range-ratio R] [--prefix-len N]\n"+
		"       [--dataset mooncake|bailian|burstgpt FILE [--trace-speed X] [--trace-start D] [--trace-duration D]]\n"+
		"       [--dataset conversations|sessions FILE [--users 4,16] [--think-time D] [--session-header NAME]]\n"+
		"       [--rate R [--arrivals poisson|constant] [--burstiness G]] [--latency-from sent|intended]\n"+
		"       [--slo ttft=2s,tpot=50ms,e2el=30s [--search concurrency|rate|speed [--search-tolerance 0.05]]]\n"+
		"       [--repeat N] [--stop-at-plateau] [--no-preflight] [--loadgen here|host]\n"+
		"       [--json FILE|-] [--jsonl FILE] [--metrics-url URL|off] [--percentile-metrics ttft,tpot,itl,e2el] [--metric-percentiles 50,95]\n"+
		"       A vllm bench serve line works too: --max-concurrency (with --request-rate, the cap on requests in flight),\n"+
		"       --num-prompts, --request-rate, --random-input-len, --random-output-len, --random-range-ratio, --random-prefix-len,\n"+
		"       --dataset-name, --dataset-path, --num-warmups, --backend, --endpoint, --base-url, --port, --served-model-name,\n"+
		"       --goodput KEY:MS…, --metadata KEY=VALUE…, --result-dir, --result-filename, --save-detailed; --ignore-eos,\n"+
		"       --tokenizer and --save-result are what happens anyway; any other of its flags is said ignored, in one line\n"+
		"       The result document is kept: beside the journal, else in ./profdeck-results, unless --json names it", stdout, stderr)
	f := &sweepFlags{vllm: &vllmArgs{}}
	fs := c.Flags
	fs.String("url", "", "server base URL as seen from the host (default: the campaign's server.url)")
	fs.StringVar(&f.model, "model", "", "model name (default: the first id from /v1/models)")
	fs.String("api", "", "completions or chat (default: the campaign's macro.api, else completions)")
	fs.String("concurrency", "", "concurrency levels, comma separated (default: the campaign's macro.concurrency, else 1,2,4,…,256)")
	fs.Int("requests", 0, "measured requests per level; 0: no count, the level ends on its duration; with --duration too, the level ends at whichever comes last (default: the campaign's macro.requests, else 64; none with --duration D alone)")
	fs.Duration("duration", 0, "measured time per level, e.g. 60s; 0: no time bound, the level ends on its request count; with --requests too, the level ends at whichever comes last (default: the campaign's macro.duration)")
	fs.Int("warmup", 0, "requests per level sent first and not counted (default: the campaign's macro.warmup, else 4)")
	fs.Int("input-len", 0, "prompt length in tokens (default: the campaign's macro.input_len, else 256)")
	fs.Int("output-len", 0, "output length in tokens, fixed with ignore_eos (default: the campaign's macro.output_len, else 256)")
	fs.Float64("rate", 0, "open loop: Poisson arrivals at R requests/s instead of a concurrency sweep; 0: a concurrency sweep (default: the campaign's macro.rate)")
	fs.String("arrivals", "", "open loop: poisson (gaps from a gamma distribution of shape --burstiness; 1 is Poisson) or constant (default: the campaign's macro.arrivals, else poisson)")
	fs.Float64("burstiness", 0, "open loop: the gamma shape of the gaps, as vllm bench serve's --burstiness: 1 is Poisson, under 1 burstier, over 1 steadier (default: the campaign's macro.burstiness, else 1)")
	fs.String("latency-from", "", "where TTFT and E2EL start: sent (the actual send) or intended (the intended send: a late client's wait counted, the coordinated-omission correction) (default: the campaign's macro.latency_from, else sent)")
	fs.String("search", "", "with --slo: find the largest concurrency (closed loop, from the --concurrency ladder), request rate (open loop, doubling from --rate, else 1 req/s) or a trace's replay speed (speed, doubling from --trace-speed) meeting it; empty: none (default: the campaign's macro.search)")
	fs.Float64("search-tolerance", 0, "how close the search's bounds come: upper - lower at most this share of lower (default: the campaign's macro.search_tolerance, else 0.05)")
	fs.Bool("stop-at-plateau", false, "end the sweep at the level where throughput stops growing (default: the campaign's macro.stop_at_plateau)")
	fs.Bool("no-preflight", false, "skip the request sent with the sweep's settings before the first level (default: the campaign's macro.no_preflight)")
	fs.DurationVar(&f.timeout, "timeout", campaign.DefaultRequestTimeout, "limit for one request")
	fs.String("slo", "", "SLO for goodput, e.g. ttft=2s,tpot=50ms,e2el=30s; empty: none (default: the campaign's macro.slo)")
	fs.String("dataset", "", "prompts: random, sharegpt FILE or jsonl FILE ({\"prompt\": …, \"output_len\": N} per line); sessions: conversations FILE (ShareGPT, turn by turn) or sessions FILE (JSONL of turns); a trace: mooncake, bailian or burstgpt FILE (default: the campaign's macro.dataset, else random)")
	fs.String("dataset-file", "", "the dataset's file, also given after --dataset's kind (default: the campaign's macro.dataset_file)")
	fs.Float64("trace-speed", 0, "with a trace dataset: replay it X times as fast (0.5: half as fast) (default: the campaign's macro.trace_speed, else 1)")
	fs.Duration("trace-start", 0, "with a trace dataset: replay from this time into the trace (default: the campaign's macro.trace_start)")
	fs.Duration("trace-duration", 0, "with a trace dataset: replay this much of the trace; 0: to its end (default: the campaign's macro.trace_duration)")
	fs.String("users", "", "with a multi-turn dataset: users per level, comma separated, each running sessions turn by turn (the levels' concurrency)")
	fs.Duration("think-time", 0, "with a multi-turn dataset: each user's wait between an answer and the next turn; a turn's own think_time_ms replaces it (default: the campaign's macro.think_time)")
	fs.String("session-header", "", "with a multi-turn dataset: the HTTP header carrying the session's id, e.g. X-Session-ID for a router with session affinity; empty: none (default: the campaign's macro.session_header)")
	fs.Int("dataset-max", 0, "use at most N prompts of the dataset, a seeded sample; 0: all (default: the campaign's macro.dataset_max)")
	fs.Float64("range-ratio", 0, "random lengths spread over ±R of --input-len and --output-len, as vLLM's --random-range-ratio, 0 to <1 (default: the campaign's macro.range_ratio)")
	fs.Int("prefix-len", 0, "every prompt starts with the same N tokens, for prefix caching (default: the campaign's macro.prefix_len)")
	fs.StringVar(&f.simMode, "sim-mode", "", "with --host sim: an emulator limited by kv, seqs or step, a noisy one, or one decoding speculatively (spec)")
	fs.Int("repeat", 0, "run each level N times: means and 95% confidence intervals (default: the campaign's macro.repeat, else 1)")
	fs.Int64Var(&f.seed, "seed", 0, "seed for prompts and arrivals (0: time based)")
	fs.String("metrics-url", "", "the server's Prometheus metrics; off: none (default: the campaign's server.metrics_url, else URL/metrics)")
	fs.String("loadgen-hosts", "", "the load agents' hosts, HOST[:PROCS],… (e.g. gen1:2,gen2:2): each level is split between them and merged into one (default: the campaign's macro.loadgen.hosts)")
	fs.String("loadgen", "", "where the load generator runs: here, or host (the GPU host: profdeck copies itself there) (default: the campaign's macro.loadgen, else here)")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (default: $OPENAI_API_KEY, or the campaign's server.api_key_env)")
	fs.StringVar(&f.pctMetrics, "percentile-metrics", "ttft,tpot,itl,e2el", "metrics whose --metric-percentiles each level reports, as vllm bench serve")
	fs.StringVar(&f.pcts, "metric-percentiles", "", "extra percentiles per level, e.g. 50,95,99.9, as keys p95_ttft_ms … in the JSON (p50, p90, p99 are always there)")
	fs.Func("result-filename", "vllm bench serve's name for --json FILE", func(s string) error { c.JSONPath = s; return nil })
	campaign.DefineAliases(fs, sweepBinds...)
	c.flagProgress()
	return c, f
}

// sweepBinds are the sweep's flags that set campaign keys.
var sweepBinds = []campaign.Flag{
	{Name: "url", Key: "server.url"}, {Name: "metrics-url", Key: "server.metrics_url"},
	{Name: "api", Key: "macro.api"}, {Name: "concurrency", Key: "macro.concurrency"},
	{Name: "requests", Key: "macro.requests"}, {Name: "duration", Key: "macro.duration"},
	{Name: "warmup", Key: "macro.warmup"}, {Name: "input-len", Key: "macro.input_len"},
	{Name: "output-len", Key: "macro.output_len"}, {Name: "rate", Key: "macro.rate"},
	{Name: "stop-at-plateau", Key: "macro.stop_at_plateau"}, {Name: "no-preflight", Key: "macro.no_preflight"},
	{Name: "slo", Key: "macro.slo"}, {Name: "repeat", Key: "macro.repeat"},
	{Name: "dataset", Key: "macro.dataset"}, {Name: "dataset-file", Key: "macro.dataset_file"},
	{Name: "dataset-max", Key: "macro.dataset_max"}, {Name: "range-ratio", Key: "macro.range_ratio"},
	{Name: "prefix-len", Key: "macro.prefix_len"}, {Name: "loadgen", Key: "macro.loadgen.mode"},
	{Name: "loadgen-hosts", Key: "macro.loadgen.hosts"},
	{Name: "arrivals", Key: "macro.arrivals"}, {Name: "burstiness", Key: "macro.burstiness"},
	{Name: "latency-from", Key: "macro.latency_from"}, {Name: "search", Key: "macro.search"},
	{Name: "search-tolerance", Key: "macro.search_tolerance"},
	{Name: "trace-speed", Key: "macro.trace_speed"}, {Name: "trace-start", Key: "macro.trace_start"},
	{Name: "trace-duration", Key: "macro.trace_duration"}, {Name: "users", Key: "macro.concurrency"},
	{Name: "think-time", Key: "macro.think_time"}, {Name: "session-header", Key: "macro.session_header"},
}

func runSweep(ctx context.Context, c *Command, f *sweepFlags) error {
	cfg, camp, err := f.plan(c)
	if err != nil {
		return err
	}
	h, err := c.OpenHost(ctx, camp, func(o *hosts.Options) {
		// The simulated server serves at once, and loads in a second unless
		// the campaign's sim section says otherwise.
		o.Sim.AutoStart, o.Sim.Emulator = true, f.emu
		if o.Sim.LoadTime == 0 {
			o.Sim.LoadTime = time.Second
		}
	})
	if err != nil {
		return err
	}
	defer h.Close()
	if d, ok := h.(*sim.Deployment); ok && !c.Set("url") {
		cfg.URL = "http://" + d.Options().ServerAddr
	}
	cfg.Dial, cfg.Host = h.DialContext, h
	cfg.GPU = gputel.New(h, gputel.Options{})
	client := &http.Client{Timeout: servermetrics.DefaultTimeout, Transport: &http.Transport{DialContext: h.DialContext, MaxIdleConns: 2}}
	defer client.CloseIdleConnections()
	opt := onhost.Options{Host: h}
	if m := campaign.MetricsURL(cfg.URL, camp.Server.MetricsURL); m != "" {
		cfg.Scraper, opt.MetricsURL = servermetrics.NewScraper(m, client), m
	}
	sw, closeAgents, err := sweepEngine(ctx, cfg, camp, opt)
	if err != nil {
		return err
	}
	defer closeAgents()
	return sweep(ctx, c, sw, h, f.vllm.metadata)
}

// plan is the sweep's configuration: the campaign with the flags given
// applied over it and checked, and the dataset read, before any work.
func (f *sweepFlags) plan(c *Command) (macro.Config, *campaign.Campaign, error) {
	camp, fromFile, err := c.Campaign(sweepBinds...)
	if err != nil {
		return macro.Config{}, nil, err
	}
	if !fromFile && !c.Set("url") {
		camp.Server.URL = "" // the defaults name no server
		if camp.Host != "sim" {
			return macro.Config{}, nil, BadInput("no server: give --url URL, or -c FILE with server.url")
		}
	}
	f.emu = vllmemu.Config{ServeBeforeReady: true}
	if c.Set("model") {
		f.emu.Model = f.model // the simulated server serves the model named
	}
	if f.simMode != "" {
		if f.emu, err = vllmemu.Mode(f.simMode, f.emu); err != nil {
			return macro.Config{}, nil, BadInput("--sim-mode: %v", err)
		}
	}
	if f.timeout <= 0 {
		return macro.Config{}, nil, BadInput("--timeout: must be more than 0, got %s", f.timeout)
	}
	key := camp.APIKey()
	if c.Set("api-key") {
		key = f.apiKey
	}
	cfg := camp.SweepConfig(key)
	if c.Set("model") {
		cfg.Model = f.model
	}
	cfg.Timeout, cfg.Seed = f.timeout, f.seed
	cfg.Gaps = f.vllm != nil && f.vllm.detailed // --save-detailed: each request's inter-token gaps too
	if c.Set("users") && !macro.IsSessionDataset(cfg.Dataset) {
		return macro.Config{}, nil, BadInput("--users: users run sessions: give a multi-turn dataset (--dataset conversations|sessions FILE)")
	}
	if err := cfg.CheckLevelTime(); err != nil {
		return macro.Config{}, nil, BadInput("--rate %v", err)
	}
	if cfg.Percentiles, err = macro.ParsePercentiles(f.pctMetrics, f.pcts); err != nil {
		return macro.Config{}, nil, BadInput("%v", err)
	}
	cfg.Log = func(msg string) { fmt.Fprintln(c.Stderr, "sweep:", msg) }
	if err := f.keep(c, camp); err != nil {
		return macro.Config{}, nil, err
	}
	cfg.JSONL = c.JSONL()
	if err := c.CheckOverlap(localfs.Named{Name: "the dataset", Path: cfg.DatasetFile}); err != nil {
		return macro.Config{}, nil, err
	}
	if err := macro.LoadWorkload(&cfg); err != nil {
		return macro.Config{}, nil, &BadInputError{Err: err}
	}
	return cfg, camp, nil
}

// sweep runs sw, printing progress, and writes the result document, with
// meta (--metadata) in it.
func sweep(ctx context.Context, c *Command, sw macro.Engine, h remote.Host, meta map[string]string) error {
	events := make(chan phases.Event, 64)
	observe, stopProgress := c.startProgress(ctx)
	defer stopProgress()
	var wg sync.WaitGroup
	wg.Go(func() { printProgress(c.Stderr, events, observe) })
	sc := sw.Config()
	via := "via " + h.Name()
	if _, ok := sw.(*onhost.Sweep); ok {
		via = "from host " + h.Name() + " (load generator on the host)"
	}
	fmt.Fprintf(c.Stderr, "sweep %s %s (%s API): levels %s, %s per level, warm-up %d, %s\n",
		remote.MaskURL(sc.URL), via, sc.API, levelList(sc), perLevel(sc), sc.Warmup, workloadText(sc))
	res, runErr := sw.Run(ctx, &phases.Emitter{Out: events})
	close(events)
	wg.Wait()
	if res == nil {
		return runErr
	}
	for _, n := range res.Notes {
		fmt.Fprintln(c.Stderr, "note:", n)
	}
	if res.Path != nil && len(res.Levels) > 0 {
		fmt.Fprintln(c.Stderr, macro.PathLine(*res.Path, res.Levels))
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintf(c.Stderr, "%d warning(s) in the result:\n", len(res.Warnings))
		for _, w := range res.Warnings {
			fmt.Fprintln(c.Stderr, "  warning:", w)
		}
	}
	res.Metadata, res.Profdeck = meta, Version
	if err := c.WriteJSON(res); err != nil {
		return err
	}
	c.sayKept()
	if runErr != nil {
		err := fmt.Errorf("interrupted after %d level(s); what was measured is written: %w", len(res.Levels), runErr)
		if len(res.Levels) > 0 && ctx.Err() == nil {
			return &StepFailedError{Err: err} // partial results kept: exit 3
		}
		return err
	}
	if completed(res) == 0 && len(res.Levels) > 0 {
		return errors.New("no request completed (the server's errors are above)")
	}
	return nil
}

func completed(res *macro.Result) int {
	n := 0
	for _, l := range res.Levels {
		n += l.Completed
	}
	return n
}

func levelList(c macro.Config) string {
	if c.Rate > 0 {
		if c.MaxInFlight > 0 {
			return fmt.Sprintf("open loop at %g req/s, at most %d in flight", c.Rate, c.MaxInFlight)
		}
		return fmt.Sprintf("open loop at %g req/s", c.Rate)
	}
	parts := make([]string, len(c.Concurrency))
	for i, n := range c.Concurrency {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ",")
}

func perLevel(c macro.Config) string {
	switch {
	case c.Duration > 0 && c.Requests > 0:
		return fmt.Sprintf("%s and %d requests, whichever comes last", c.Duration, c.Requests)
	case c.Duration > 0:
		return c.Duration.String()
	}
	return fmt.Sprintf("%d requests", c.Requests)
}

// printProgress writes one line per finished level, its warnings, an
// example of each distinct error the first time it comes, and the plateau
// and client-bound warnings, as they come.
func printProgress(w io.Writer, events <-chan phases.Event, observe func(phases.Event)) {
	seen := map[string]bool{}
	gpuSaid := 0      // the GPU sampler's notes printed so far
	searched := false // a search said its answer: the SLO's is the same
	for ev := range events {
		observe(ev)
		switch d := ev.Data.(type) {
		case phases.MacroWarning:
			fmt.Fprintln(w, "warning:", d.Text)
		case phases.GPUTelSource:
			if gpuSaid == 0 && d.Source != "" {
				fmt.Fprintf(w, "gpu: %s on %s, %d GPUs\n", d.Command, d.Host, d.GPUs)
			}
			for ; gpuSaid < len(d.Notes); gpuSaid++ {
				fmt.Fprintln(w, "gpu:", d.Notes[gpuSaid])
			}
		case phases.MacroPath:
			fmt.Fprintln(w, macro.PathLine(d, nil))
		case phases.LevelResult:
			fmt.Fprintln(w, LevelLine(d))
			if d.Schedule != nil {
				fmt.Fprintln(w, "       schedule:", ScheduleLine(*d.Schedule))
			}
			if d.Sessions != nil {
				for _, x := range SessionLines(*d.Sessions) {
					fmt.Fprintln(w, "      ", x)
				}
			}
			for _, n := range d.Notes {
				fmt.Fprintln(w, "       note:", n)
			}
			for _, x := range macro.LevelDetail(d, seen) {
				fmt.Fprintln(w, "      ", x)
			}
		case phases.Plateau:
			fmt.Fprintf(w, "plateau: C=%d at %.1f tok/s (the next level adds less than 10%%)\n", d.Concurrency, d.OutputThroughput)
			if line := macro.VerdictLine(&d); d.Reason != "" {
				fmt.Fprintf(w, "verdict (%s): %s\n", d.Reason, line)
			}
		case phases.SLOMet:
			if !searched {
				fmt.Fprintln(w, "slo:", d.Text)
			}
		case phases.Search:
			searched = true
			fmt.Fprintln(w, SearchLine(d))
		case phases.ClientBound:
			fmt.Fprintf(w, "warning: %s was limited by this client, not the server: %s\n", phases.LevelName(d.Concurrency, d.Rate), d.Reason)
		}
	}
}

// LevelLine is one finished level in one line.
func LevelLine(l phases.LevelResult) string {
	name := fmt.Sprintf("C=%-4d", l.Concurrency)
	if l.Rate > 0 {
		name = fmt.Sprintf("R=%-6g", l.Rate)
	}
	s := fmt.Sprintf("%s %4d ok %3d failed  %8.1f tok/s  %6.2f req/s  p50/p90/p99 ms: TTFT %s  TPOT %s  ITL %s  E2EL %s  [%s]",
		name, l.Completed, l.Failed, l.OutputThroughput, l.RequestThroughput, p3(l.MedianTTFTms, l.P90TTFTms, l.P99TTFTms),
		p3(l.MedianTPOTms, l.P90TPOTms, l.P99TPOTms), p3(l.MedianITLms, l.P90ITLms, l.P99ITLms),
		p3(l.MedianE2ELms, l.P90E2ELms, l.P99E2ELms), l.TokenSource)
	if len(l.Failures) > 0 {
		s += "  failures:"
		for _, k := range slices.Sorted(maps.Keys(l.Failures)) {
			s += fmt.Sprintf(" %s=%d", k, l.Failures[k])
		}
	}
	if l.ClientBound {
		s += "  CLIENT-BOUND"
	}
	if l.Few() {
		s += fmt.Sprintf("  FEW REQUESTS (%d < %d)", l.Completed, phases.MinRequests)
	}
	return s
}

// p3 is a metric's p50/p90/p99 in ms, e.g. 12.3/15.0/21.7.
func p3(p50, p90, p99 float64) string {
	return fmt.Sprintf("%.1f/%.1f/%.1f", p50, p90, p99)
}

// datasetArgs lets the dataset's file follow its kind, as in
// "--dataset sharegpt FILE": the file becomes --dataset-file.
func datasetArgs(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		out = append(out, args[i])
		if a := args[i]; (a == "--dataset" || a == "-dataset") && i+2 < len(args) &&
			(args[i+1] == macro.DatasetShareGPT || args[i+1] == macro.DatasetJSONL || macro.IsTraceFormat(args[i+1]) || macro.IsSessionDataset(args[i+1])) &&
			!strings.HasPrefix(args[i+2], "-") {
			out = append(out, args[i+1], "--dataset-file", args[i+2])
			i += 2
		}
		if args[i] == "--" {
			out = append(out, args[i+1:]...)
			break
		}
	}
	return out
}

// workloadText says what the requests are: their lengths, or the dataset.
func workloadText(sc macro.Config) string {
	s := fmt.Sprintf("input %d, output %d tokens", sc.InputLen, sc.OutputLen)
	switch {
	case sc.Dataset == macro.DatasetShareGPT || sc.Dataset == macro.DatasetJSONL:
		s = fmt.Sprintf("prompts and output lengths from %s %s", sc.Dataset, sc.DatasetFile)
	case macro.IsTraceFormat(sc.Dataset):
		s = fmt.Sprintf("the %s trace %s replayed at %g× its speed", sc.Dataset, sc.DatasetFile, sc.TraceSpeed)
		if tr := sc.TraceSummary(); tr != nil {
			reuse := "no hash ids, so no prefix reuse known"
			if tr.BlockTokens > 0 {
				reuse = fmt.Sprintf("its hash ids imply %.1f%% prefix reuse", 100*tr.ImpliedReuse)
			}
			s += fmt.Sprintf(" (%d requests over %.1fs, %.3g req/s; %s)", tr.Requests, tr.SpanSeconds, tr.MeanRate, reuse)
		}
	case macro.IsSessionDataset(sc.Dataset):
		s = fmt.Sprintf("sessions of %s %s, each level's concurrency its users, thinking %s between turns", sc.Dataset, sc.DatasetFile, sc.ThinkTime)
		if sc.SessionHeader != "" {
			s += fmt.Sprintf(", the session's id in %s", sc.SessionHeader)
		}
	case sc.RangeRatio > 0:
		s = fmt.Sprintf("input %d, output %d tokens ±%g%%", sc.InputLen, sc.OutputLen, 100*sc.RangeRatio)
	}
	if sc.PrefixLen > 0 {
		s += fmt.Sprintf(", each prompt after the same %d-token prefix", sc.PrefixLen)
	}
	return s + fmt.Sprintf(", seed %d", sc.Seed)
}

// SearchLine is the search as it stands: its latest step and interval, or
// its answer once done.
func SearchLine(s phases.Search) string {
	if s.Done || len(s.Steps) == 0 {
		return "search: " + s.Text
	}
	st := s.Steps[len(s.Steps)-1]
	verdict := "met the SLO"
	if !st.Met {
		verdict = "missed the SLO"
		if st.Why == phases.StopSaturation {
			verdict += " (over-saturated)"
		}
	}
	noise := ""
	if st.Runs > 1 {
		noise = fmt.Sprintf(", %d runs", st.Runs)
	}
	return fmt.Sprintf("search (%s): %s %s: %.0f%% of requests within it (95%% interval %.0f–%.0f%%%s); the limit in %s",
		st.Phase, s.ValueText(st.Value), verdict, 100*st.Share, 100*st.ShareLow, 100*st.ShareHigh, noise, s.Interval())
}

// ScheduleLine is an open-loop level's schedule against what was sent.
func ScheduleLine(sc phases.Schedule) string {
	arr := sc.Arrivals
	if sc.Arrivals == macro.ArrivalsPoisson && sc.Burstiness != 1 {
		arr = fmt.Sprintf("gamma, burstiness %g", sc.Burstiness)
	}
	s := fmt.Sprintf("%s arrivals, %.3g req/s sent of %.3g scheduled (%g requested); scheduling delay p50 %.1f ms, p99 %.1f ms; %s",
		arr, sc.AchievedRate, sc.ScheduledRate, sc.RequestedRate, sc.P50DelayMs, sc.P99DelayMs, macro.LatencyWords(sc.LatencyFrom))
	if sc.TraceSpeed > 0 {
		s += fmt.Sprintf("; the trace at %g×", sc.TraceSpeed)
		if sc.TraceReuse != nil {
			s += fmt.Sprintf(", its hash ids imply %.1f%% prefix reuse", 100**sc.TraceReuse)
		}
	}
	if sc.FellBehind {
		s += "  FELL BEHIND"
	}
	return s
}
