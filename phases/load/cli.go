// Package load is the Server & Load phase: it follows a vLLM server's weight
// loading per GPU (the log through vllmlog, memory through nvidia-smi,
// readiness through GET /health), detects stalls and failures, and starts,
// stops and restarts the server from the campaign's settings.
//
// The engine is Watcher (Run for the cockpit, Until for the headless `load`
// command); the lifecycle is Server; Tracker holds the pure load state.
package load

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/report/campaign"
)

// ParseLogMain is `profdeck parse vllm-log FILE`: the log's summary as JSON.
func ParseLogMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parse vllm-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck parse vllm-log FILE   (- reads standard input)")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	r, closeFn, err := openInput(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "profdeck parse vllm-log: %v\n", err)
		return 1
	}
	defer closeFn()
	sum, err := vllmlog.Read(r)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck parse vllm-log: reading %s: %v (the summary covers what was read)\n", fs.Arg(0), err)
	}
	writeJSON(stdout, sum)
	if err != nil {
		return 1
	}
	return 0
}

// ParseSMIMain is `profdeck parse nvidia-smi FILE`: one reading per GPU as JSON.
func ParseSMIMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parse nvidia-smi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fields := fs.String("fields", "", "columns of a CSV without header, as given to --query-gpu (default "+strings.Join(smi.QueryFields, ",")+")")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck parse nvidia-smi [--fields a,b,c] FILE   (table, CSV with or without header/units, dmon, -L; - reads standard input)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	r, closeFn, err := openInput(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "profdeck parse nvidia-smi: %v\n", err)
		return 1
	}
	defer closeFn()
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		fmt.Fprintf(stderr, "profdeck parse nvidia-smi: reading %s: %v\n", fs.Arg(0), err)
		return 1
	}
	var names []string
	if *fields != "" {
		for _, f := range strings.Split(*fields, ",") {
			names = append(names, strings.TrimSpace(f))
		}
	}
	gpus := smi.Parse(string(b), names)
	writeJSON(stdout, map[string]any{"gpus": gpus})
	if len(gpus) == 0 {
		fmt.Fprintf(stderr, "profdeck parse nvidia-smi: no GPU readings found in %s\n", fs.Arg(0))
		return 1
	}
	return 0
}

func openInput(name string) (io.Reader, func(), error) {
	if name == "-" {
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// loadFlags are the `profdeck load` options.
type loadFlags struct {
	campaign, host, log, url string
	expect                   float64
	stallAfter, poll, every  time.Duration
	json                     bool
	// The simulated host's load (host "sim" only).
	simLoad    time.Duration
	simStallAt float64
	simFail    string
}

// LoadMain is `profdeck load`: follow a load until ready (exit 0), failed or
// stalled (exit 2, the reason on stderr), printing a status line every few
// seconds.
func LoadMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f loadFlags
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.campaign, "c", "", "campaign file (default ./profdeck.yaml when --host is not given)")
	fs.StringVar(&f.host, "host", "", "host: sim, local or an SSH target (overrides the campaign)")
	fs.StringVar(&f.log, "log", "", "the server's log file on the host (default "+DefaultLogPath+")")
	fs.StringVar(&f.url, "url", "", "the server's URL as seen from the host (default http://127.0.0.1:8000)")
	fs.Float64Var(&f.expect, "expect-gib", 0, "expected weights per GPU in GiB (default: the campaign's model.expect_gib, else from the log)")
	fs.DurationVar(&f.stallAfter, "stall-after", 0, "no progress for this long is a stall (default 5m, or 5× the seconds per shard)")
	fs.DurationVar(&f.poll, "poll", 0, "nvidia-smi and /health period (default 1s)")
	fs.DurationVar(&f.every, "every", 5*time.Second, "status line period")
	fs.BoolVar(&f.json, "json", false, "print events and states as JSON lines")
	fs.DurationVar(&f.simLoad, "sim-load-time", 0, "host sim only: how long the simulated load takes (default 60s)")
	fs.Float64Var(&f.simStallAt, "sim-stall-at", 0, "host sim only: the simulated load stalls at this many GiB per GPU")
	fs.StringVar(&f.simFail, "sim-fail", "", "host sim only: the simulated load fails with oom or nccl")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "profdeck load: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, spec, opts, err := f.config()
	if err != nil {
		fmt.Fprintf(stderr, "profdeck load: %v\n", err)
		return 2
	}
	host, err := hosts.Open(ctx, spec, opts)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck load: host %s: %v\n", spec, err)
		return 1
	}
	defer host.Close()
	cfg.Host = host
	events := make(chan phases.Event, 256)
	w := NewWatcher(cfg)
	type result struct {
		end Ending
		err error
	}
	done := make(chan result, 1)
	go func() {
		end, err := w.Until(ctx, &phases.Emitter{Out: events})
		done <- result{end, err}
	}()
	p := &printer{out: stdout, json: f.json, every: f.every}
	for {
		select {
		case ev := <-events:
			p.event(ev)
		case r := <-done:
			for len(events) > 0 {
				p.event(<-events)
			}
			return p.finish(r.end, r.err, stderr)
		}
	}
}

func (f *loadFlags) config() (Config, string, hosts.Options, error) {
	c := campaign.Defaults()
	path := f.campaign
	if path == "" && f.host == "" {
		if _, err := os.Stat(campaign.DefaultPath); err == nil {
			path = campaign.DefaultPath
		}
	}
	if path != "" {
		var err error
		if c, err = campaign.LoadFile(path); err != nil {
			return Config{}, "", hosts.Options{}, err
		}
	} else if f.host == "" {
		return Config{}, "", hosts.Options{}, errors.New("give -c FILE, or --host HOST (with --log and --url), or run where profdeck.yaml is")
	}
	spec := c.Host
	if f.host != "" {
		spec = f.host
	}
	cfg := Config{LogPath: c.Server.Log, HealthURL: HealthURL(c.Server.URL), ExpectGiB: c.Model.ExpectGiB,
		StallAfter: c.Load.StallAfter.Duration, Poll: c.Load.PollInterval.Duration}
	if f.log != "" {
		cfg.LogPath = f.log
	}
	cfg.Container = c.Server.Container
	if cfg.LogPath != "" {
		cfg.PIDFile = cfg.LogPath + ".pid" // where Server.Start keeps the launch's pid
	} else {
		cfg.PIDFile = DefaultLogPath + ".pid"
	}
	if f.url != "" {
		cfg.HealthURL = HealthURL(f.url)
	}
	if f.expect > 0 {
		cfg.ExpectGiB = f.expect
	}
	if f.stallAfter > 0 {
		cfg.StallAfter = f.stallAfter
	}
	if f.poll > 0 {
		cfg.Poll = f.poll
	}
	opts := hosts.Options{Identity: c.SSH.Identity, KnownHosts: c.SSH.KnownHosts, SSHConfig: c.SSH.Config,
		AcceptNewHostKey: c.SSH.AcceptNewHostKey}
	// Nothing launches the simulated server in a headless follow: it loads
	// on its own.
	opts.Sim.AutoStart = true
	opts.Sim.LoadTime, opts.Sim.StallAtGiB, opts.Sim.FailWith = f.simLoad, f.simStallAt, f.simFail
	if cfg.LogPath != "" {
		opts.Sim.LogPath = cfg.LogPath
	}
	return cfg, spec, opts, nil
}
