package macro

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
)

// SweepMain is `profdeck sweep`: a headless concurrency sweep. Progress goes
// to stderr, one line per finished level; --json writes the result document,
// --jsonl appends one line per finished request as it goes. It exits 0 when
// the sweep ran (failed requests are data), 1 when it could not start, 2 on
// bad flags, 130 when interrupted (what was measured is still written). A
// sweep in which no request completed exits 1 (after writing its result).
func SweepMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg        Config
		conc       = fs.String("concurrency", "1,2,4,8,16,32,64,128,256", "concurrency levels, comma separated")
		jsonOut    = fs.String("json", "", "write the result document to FILE (- for stdout)")
		jsonlOut   = fs.String("jsonl", "", "append one JSON line per finished request to FILE")
		metricsURL = fs.String("metrics-url", "", "the server's Prometheus metrics (default URL/metrics; off to skip)")
		apiKey     = fs.String("api-key", "", "API key (default $OPENAI_API_KEY)")
	)
	fs.StringVar(&cfg.URL, "url", "", "server base URL, e.g. http://127.0.0.1:8000 (required)")
	fs.StringVar(&cfg.Model, "model", "", "model name (default: the first id from /v1/models)")
	fs.StringVar(&cfg.API, "api", APICompletions, "completions or chat")
	fs.IntVar(&cfg.Requests, "requests", 0, "measured requests per level (default 64, or no cap with --duration)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "measured time per level, e.g. 60s (instead of --requests)")
	fs.IntVar(&cfg.Warmup, "warmup", 4, "requests per level sent first and not counted")
	fs.IntVar(&cfg.InputLen, "input-len", 256, "prompt length in tokens")
	fs.IntVar(&cfg.OutputLen, "output-len", 256, "output length in tokens (fixed with ignore_eos)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: Poisson arrivals at R requests/s instead of a concurrency sweep")
	fs.BoolVar(&cfg.StopAtPlateau, "stop-at-plateau", false, "end the sweep at the level where throughput stops growing")
	fs.BoolVar(&cfg.NoPreflight, "no-preflight", false, "skip the request sent with the sweep's settings before the first level")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "limit for one request")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed for prompts and arrivals (default: time based)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck sweep --url URL [--model NAME] [--api completions|chat] [--concurrency 1,2,4]\n"+
			"       [--requests N | --duration D] [--warmup N] [--input-len N] [--output-len N] [--rate R]\n"+
			"       [--stop-at-plateau] [--no-preflight] [--json FILE|-] [--jsonl FILE] [--metrics-url URL|off]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "profdeck sweep: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if cfg.Requests > 0 && cfg.Duration > 0 {
		fmt.Fprintln(stderr, "profdeck sweep: give --requests or --duration, not both")
		return 2
	}
	levels, err := ParseConcurrency(*conc)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck sweep: %v\n", err)
		return 2
	}
	cfg.Concurrency = levels
	cfg.APIKey = *apiKey
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	cfg.Log = func(msg string) { fmt.Fprintln(stderr, "sweep:", msg) }

	var jsonl *os.File
	if *jsonlOut != "" {
		jsonl, err = os.OpenFile(*jsonlOut, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "profdeck sweep: --jsonl: %v\n", err)
			return 1
		}
		defer jsonl.Close()
		cfg.JSONL = jsonl
	}
	sw, err := NewSweep(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck sweep: %v\n", err)
		return 2
	}
	if m := strings.TrimSpace(*metricsURL); m != "off" && m != "none" {
		if m == "" {
			m = sw.Config().URL + "/metrics"
		}
		cfg.Scraper = servermetrics.NewScraper(m, &http.Client{Timeout: servermetrics.DefaultTimeout})
		sw.cfg.Scraper = cfg.Scraper
	}

	events := make(chan phases.Event, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		printProgress(stderr, events)
	}()
	fmt.Fprintf(stderr, "sweep %s (%s API): levels %s, %s per level, warm-up %d, input %d, output %d tokens\n",
		sw.Config().URL, sw.Config().API, levelList(sw.Config()), perLevel(sw.Config()), cfg.Warmup, sw.Config().InputLen, sw.Config().OutputLen)
	res, runErr := sw.Run(ctx, &phases.Emitter{Out: events})
	close(events)
	wg.Wait()
	if res == nil {
		fmt.Fprintf(stderr, "profdeck sweep: %v\n", runErr)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	for _, n := range res.Notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintf(stderr, "%d warning(s) in the result:\n", len(res.Warnings))
		for _, w := range res.Warnings {
			fmt.Fprintln(stderr, "  warning:", w)
		}
	}
	if *jsonOut != "" {
		if err := writeResult(*jsonOut, res, stdout); err != nil {
			fmt.Fprintf(stderr, "profdeck sweep: --json: %v\n", err)
			return 1
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "profdeck sweep: interrupted after %d level(s); what was measured is written\n", len(res.Levels))
		return 130
	}
	if completed(res) == 0 && len(res.Levels) > 0 {
		fmt.Fprintln(stderr, "profdeck sweep: no request completed (the server's errors are above)")
		return 1
	}
	return 0
}

func levelList(c Config) string {
	if c.Rate > 0 {
		return fmt.Sprintf("open loop at %g req/s", c.Rate)
	}
	parts := make([]string, len(c.Concurrency))
	for i, n := range c.Concurrency {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ",")
}

func perLevel(c Config) string {
	switch {
	case c.Duration > 0 && c.Requests > 0:
		return fmt.Sprintf("%s (at most %d requests)", c.Duration, c.Requests)
	case c.Duration > 0:
		return c.Duration.String()
	}
	return fmt.Sprintf("%d requests", c.Requests)
}

func completed(res *Result) int {
	n := 0
	for _, l := range res.Levels {
		n += l.Completed
	}
	return n
}

// printProgress writes one line per finished level, its warnings, an
// example of each distinct error the first time it comes, and the plateau
// and client-bound warnings, as they come.
func printProgress(w io.Writer, events <-chan phases.Event) {
	seen := map[string]bool{}
	for ev := range events {
		switch d := ev.Data.(type) {
		case phases.MacroWarning:
			fmt.Fprintln(w, "warning:", d.Text)
		case phases.LevelResult:
			fmt.Fprintln(w, LevelLine(d))
			for _, n := range d.Notes {
				fmt.Fprintln(w, "       note:", n)
			}
			for _, x := range LevelDetail(d, seen) {
				fmt.Fprintln(w, "      ", x)
			}
		case phases.Plateau:
			fmt.Fprintf(w, "plateau: C=%d at %.1f tok/s (the next level adds less than 10%%)\n", d.Concurrency, d.OutputThroughput)
		case phases.ClientBound:
			fmt.Fprintf(w, "warning: C=%d was limited by this client, not the server: %s\n", d.Concurrency, d.Reason)
		}
	}
}

// LevelLine is one finished level in one line.
func LevelLine(l phases.LevelResult) string {
	name := fmt.Sprintf("C=%-4d", l.Concurrency)
	if l.Rate > 0 {
		name = fmt.Sprintf("R=%-6g", l.Rate)
	}
	s := fmt.Sprintf("%s %4d ok %3d failed  %8.1f tok/s  %6.2f req/s  TTFT p50 %7.1f ms  TPOT p50 %6.2f ms  ITL p50 %6.2f ms  E2EL p50 %8.1f ms  [%s]",
		name, l.Completed, l.Failed, l.OutputThroughput, l.RequestThroughput, l.MedianTTFTms, l.MedianTPOTms, l.MedianITLms, l.MedianE2ELms, l.TokenSource)
	if len(l.Failures) > 0 {
		s += "  failures:"
		for _, k := range sortedKeys(l.Failures) {
			s += fmt.Sprintf(" %s=%d", k, l.Failures[k])
		}
	}
	if l.ClientBound {
		s += "  CLIENT-BOUND"
	}
	return s
}

func writeResult(path string, res *Result, stdout io.Writer) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
