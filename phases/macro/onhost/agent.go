package onhost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/gputel"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/phases/macro/hdrsec"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/remote"
)

// maxDown bounds one line the agent reads (the spec is the longest).
const maxDown = 1 << 20

// wireOut writes up lines, one at a time from any goroutine.
type wireOut struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func (o *wireOut) send(u up) error {
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	o.w.Write(append(b, '\n'))
	o.err = o.w.Flush()
	return o.err
}

// jsonlOut is the sweep's per-request writer on the host: each record
// travels up as one line.
type jsonlOut struct{ o *wireOut }

func (j jsonlOut) Write(p []byte) (int, error) {
	if err := j.o.send(up{JSONL: json.RawMessage(trimNL(p))}); err != nil {
		return 0, err
	}
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

// Serve is the agent: it reads the spec from in, runs the sweep against
// the server as h sees it (h is this machine on a real host), writes its
// events, records and result to out, and obeys the steering lines that
// follow the spec. The end of in (the connection to the operator is gone)
// cancels the sweep; its result is still written before Serve returns.
func Serve(ctx context.Context, h remote.Host, in io.Reader, out io.Writer) error {
	o := &wireOut{w: bufio.NewWriterSize(out, 64<<10)}
	rd := bufio.NewReaderSize(in, 64<<10)
	var first down
	line, err := readLine(rd)
	if err == nil {
		err = json.Unmarshal(line, &first)
	}
	if err == nil && first.Spec == nil && first.Load == nil {
		err = errors.New("the first line is not a spec")
	}
	if err != nil {
		err = fmt.Errorf("%s: reading the sweep's configuration: %w", AgentCommand, err)
		o.send(up{Done: true, Err: err.Error()})
		return err
	}
	if err := o.send(up{Ready: true}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if first.Load != nil {
		return serveLoad(ctx, h, *first.Load, rd, o, cancel)
	}
	var early []down
	if first.Spec.AwaitStart {
		if early, err = awaitStart(ctx, rd, o); err != nil {
			return err
		}
	}
	cfg, closeCfg := hostConfig(*first.Spec, h, o)
	res, runErr := run(ctx, cfg, o, func(sw *macro.Sweep) {
		for _, d := range early {
			apply(sw, d)
		}
		go steer(rd, sw, cancel)
	})
	closeCfg() // the last histograms go up before the result
	d := up{Done: true, Result: res}
	if runErr != nil {
		var ie *phases.InputError
		d.Err, d.Input, d.Cancelled = runErr.Error(), errors.As(runErr, &ie), errors.Is(runErr, context.Canceled)
	}
	if err := sendDone(o, d); err != nil {
		return err
	}
	return runErr
}

// named is the machine the agent runs on, called as the operator calls it.
type named struct {
	remote.Host
	name string
}

func (n named) Name() string { return n.name }

// partSize is the longest result sent in one line.
var partSize = 256 << 10

// sendDone sends the last line, its result in parts when it is long.
func sendDone(o *wireOut, d up) error {
	if d.Result != nil {
		b, err := json.Marshal(d.Result)
		if err != nil {
			return err
		}
		if len(b) > partSize {
			for len(b) > 0 {
				n := min(len(b), partSize)
				if err := o.send(up{Part: string(b[:n])}); err != nil {
					return err
				}
				b = b[n:]
			}
			d.Result, d.Parts = nil, true
		}
	}
	return o.send(d)
}

// hostConfig makes the sweep's configuration on the host: spec's settings,
// connections opened from h, the server's metrics scraped from h, the
// records and log lines sent up.
func hostConfig(s Spec, h remote.Host, o *wireOut) (macro.Config, func()) {
	cfg := s.config()
	if s.HostName != "" && !remote.IsSimulated(h) {
		h = named{h, s.HostName}
	}
	cfg.Dial, cfg.Host = h.DialContext, h
	cfg.Path = phases.PathHost // the load leaves from the server's host
	cfg.Log = func(msg string) { o.send(up{Log: msg}) }
	if s.JSONL {
		cfg.JSONL = jsonlOut{o}
	}
	stopBatches := func() {}
	if s.Histograms {
		t := hdrsec.NewTally(s.Duration.Seconds())
		cfg.Observe = t.Take
		stopBatches = batches(t, o)
	}
	if s.GPU {
		cfg.GPU = gputel.New(h, gputel.Options{})
	}
	client := &http.Client{Timeout: servermetrics.DefaultTimeout, Transport: &http.Transport{DialContext: h.DialContext, MaxIdleConns: 2}}
	if s.MetricsURL != "" {
		cfg.Scraper = servermetrics.NewScraper(s.MetricsURL, client)
	}
	return cfg, func() { stopBatches(); client.CloseIdleConnections() }
}

// run runs one sweep of cfg, sending its events up as they come; started
// is called with the sweep before it runs.
func run(ctx context.Context, cfg macro.Config, o *wireOut, started func(*macro.Sweep)) (*macro.Result, error) {
	if err := macro.LoadWorkload(&cfg); err != nil {
		return nil, &phases.InputError{Err: err}
	}
	sw, err := macro.NewSweep(cfg)
	if err != nil {
		return nil, &phases.InputError{Err: err}
	}
	started(sw)
	events := make(chan phases.Event, 256)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range events {
			b, err := json.Marshal(ev)
			if err == nil {
				o.send(up{Event: b})
			}
		}
	})
	res, err := sw.Run(ctx, &phases.Emitter{Out: events})
	close(events)
	wg.Wait()
	return res, err
}

// steer applies the steering lines to sw until in ends, then cancels the
// sweep: nobody is left to read what it measures.
func steer(rd *bufio.Reader, sw *macro.Sweep, cancel func()) {
	defer cancel()
	for {
		line, err := readLine(rd)
		if err != nil {
			return
		}
		var d down
		if json.Unmarshal(line, &d) == nil {
			apply(sw, d)
		}
	}
}

// apply applies one steering operation to sw.
func apply(sw *macro.Sweep, d down) {
	switch d.Op {
	case opPause:
		sw.Pause()
	case opResume:
		sw.Resume()
	case opStop:
		sw.Stop()
	case opConc:
		sw.SetConcurrency(d.N)
	}
}

// readLine reads one line of at most maxDown bytes.
func readLine(rd *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := rd.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, chunk...)
		if len(line) > maxDown {
			return nil, fmt.Errorf("a line longer than %d bytes", maxDown)
		}
		if !isPrefix {
			return line, nil
		}
	}
}
