// Package gputel samples a host's GPUs while a phase runs: one long-running
// `nvidia-smi dmon -s pucvmet` per host (over the host's one connection,
// not one process per sample), once a second by default, giving per GPU
// SM utilisation, memory used, power, SM clock, power and thermal
// violations and PCIe receive/transmit, plus NVLink receive/transmit from
// the GPM metrics where the GPU has them (Hopper and later). Energy is
// integrated from the sampled power (an estimate, said so). Rounds are kept
// in a ring of fixed size, so a day of sampling holds bounded memory; a
// level's summary (mean and peak power, utilisation, clocks, throttling,
// energy per output token, link GB/s) is taken from the ring.
package gputel

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/remote"
)

// Options tune a sampler; the zero value means the defaults.
type Options struct {
	Interval time.Duration // between rounds, whole seconds (default 1s)
	Keep     time.Duration // how much history the ring holds (default 6h)
}

// SourceDmon is the source every reading comes from.
const SourceDmon = "nvidia-smi dmon"

// Sampler samples one host's GPUs. Run it once; Level and Source are safe
// to call from other goroutines while it runs.
type Sampler struct {
	host remote.Host
	opt  Options

	mu  sync.Mutex
	src phases.GPUTelSource
	rb  ring
}

// New prepares a sampler of h's GPUs.
func New(h remote.Host, o Options) *Sampler {
	if o.Interval < time.Second {
		o.Interval = time.Second
	}
	if o.Keep <= 0 {
		o.Keep = 6 * time.Hour
	}
	n := int(o.Keep / o.Interval)
	return &Sampler{host: h, opt: o, rb: ring{rounds: make([]round, 0, min(n, 1024)), cap: n}}
}

// Source is what the sampler found on the host (empty before Run probed).
func (s *Sampler) Source() phases.GPUTelSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src
}

// Run probes the host once, says what it reads and lacks (one
// KindMacroGPUSource event), then follows the sampler's output until ctx
// ends, emitting each round. A sampler that dies (a dropped connection) is
// started again after a pause, said once. A host without nvidia-smi ends
// Run at once with a nil error: the event says so.
func (s *Sampler) Run(ctx context.Context, em *phases.Emitter) error {
	src, gpm, err := s.probe(ctx)
	if err != nil {
		return err
	}
	if src.Source != "" {
		src.Command = smi.DmonCommand(int(s.opt.Interval/time.Second), gpm)
	}
	s.mu.Lock()
	s.src = src
	s.mu.Unlock()
	em.Emit(ctx, phases.KindMacroGPUSource, &src)
	if src.Source == "" {
		return nil
	}
	cmd := src.Command
	restarted := false
	for pause := 2 * time.Second; ctx.Err() == nil; pause = min(2*pause, 30*time.Second) {
		err := s.follow(ctx, em, cmd, src.GPUs)
		if ctx.Err() != nil {
			break
		}
		if !restarted {
			restarted = true
			s.note(ctx, em, fmt.Sprintf("the GPU sampler on %s stopped (%s); it is started again", s.host.Name(), oneLine(err)))
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	return nil
}

// note adds one line to the source's notes and says it again.
func (s *Sampler) note(ctx context.Context, em *phases.Emitter, text string) {
	s.mu.Lock()
	if len(s.src.Notes) < 16 {
		s.src.Notes = append(s.src.Notes, text)
	}
	src := s.src
	src.Notes = append([]string(nil), s.src.Notes...)
	s.mu.Unlock()
	em.Emit(ctx, phases.KindMacroGPUSource, &src)
}

// follow runs the long-running dmon and turns its rows into rounds: a
// round is complete when every GPU has a row, or when a GPU comes again.
func (s *Sampler) follow(ctx context.Context, em *phases.Emitter, cmd string, gpus int) error {
	var d smi.Dmon
	var pending []phases.GPUTel
	flush := func(at time.Time) {
		if len(pending) == 0 {
			return
		}
		smp := phases.GPUTelSample{Host: s.host.Name(), At: at, GPUs: pending}
		s.mu.Lock()
		s.rb.add(smp)
		s.mu.Unlock()
		em.Emit(ctx, phases.KindMacroGPU, &smp)
		pending = nil
	}
	err := s.host.Run(ctx, cmd, nil, func(l remote.Line) {
		if l.Stream != remote.Stdout {
			return
		}
		r, ok := d.Line(l.Text)
		for _, w := range d.Warnings() {
			s.note(ctx, em, w+" (on "+s.host.Name()+")")
		}
		if !ok {
			return
		}
		at := l.At
		if at.IsZero() {
			at = time.Now()
		}
		for _, g := range pending {
			if g.Index == r.Index {
				flush(at)
				break
			}
		}
		if len(pending) < 4096 {
			pending = append(pending, reading(r))
		}
		if gpus > 0 && len(pending) >= gpus {
			flush(at)
		}
	})
	flush(time.Now())
	if err == nil {
		err = fmt.Errorf("%s ended", cmd)
	}
	return err
}

// reading turns a dmon row into a GPU's reading: PCIe MB/s and the GPM
// NVLink MiB/s to GB/s.
func reading(r smi.DmonRow) phases.GPUTel {
	gb := func(v float64) *float64 { return known(v / 1000) }
	gib := func(v float64) *float64 { return known(v * 1.048576 / 1000) }
	return phases.GPUTel{Index: r.Index, UtilPct: known(r.SMPct), MemUsedMiB: known(r.FBMiB), PowerW: known(r.PowerW),
		SMClockMHz: known(r.SMClockMHz), PowerViolPct: known(r.PowerViolPct), ThermalViolPct: known(r.ThermalViolPct),
		PCIeRxGBs: gb(r.PCIeRxMBs), PCIeTxGBs: gb(r.PCIeTxMBs), NVLinkRxGBs: gib(r.NVLinkRxMBs), NVLinkTxGBs: gib(r.NVLinkTxMBs)}
}

func known(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// probed is what the probe found on the host.
type probed struct {
	noSMI, dcgmi bool
	nvlink       string // nvidia-smi nvlink -s
	gpmOK        bool   // dmon took --gpm-metrics 60,61
	dmon         string // one round of dmon (with GPM when it took them)
}

// probe asks the host once, in a few short commands, what it has:
// nvidia-smi, dcgmi, NVLink links, and whether dmon takes the GPM NVLink
// metrics.
func (s *Sampler) probe(ctx context.Context) (phases.GPUTelSource, bool, error) {
	src := phases.GPUTelSource{Host: s.host.Name()}
	run := func(cmd string) (string, error) {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return remote.Output(pctx, s.host, cmd)
	}
	var p probed
	if _, err := run("command -v nvidia-smi"); err != nil {
		if ctx.Err() != nil {
			return src, false, ctx.Err()
		}
		p.noSMI = true
		return src, readProbe(p, &src), nil
	}
	_, err := run("command -v dcgmi")
	p.dcgmi = err == nil
	p.nvlink, _ = run("nvidia-smi nvlink -s")
	p.dmon, err = run(smi.DmonCommand(1, true) + " -c 1")
	p.gpmOK = err == nil
	if !p.gpmOK {
		p.dmon, _ = run(smi.DmonCommand(1, false) + " -c 1")
	}
	if ctx.Err() != nil {
		return src, false, ctx.Err()
	}
	return src, readProbe(p, &src), nil
}

// readProbe fills src from the probe's answers and says whether the
// sampler should ask dmon for the GPM NVLink metrics.
func readProbe(p probed, src *phases.GPUTelSource) (gpm bool) {
	if p.noSMI {
		src.Notes = []string{fmt.Sprintf("no GPU telemetry on %s: nvidia-smi is not there", src.Host)}
		return false
	}
	gpm = p.gpmOK && strings.Contains(p.dmon, "nvlrx")
	src.GPUs = dmonGPUs(p.dmon)
	if src.GPUs == 0 {
		src.Notes = []string{fmt.Sprintf("no GPU telemetry on %s: nvidia-smi dmon gave no GPU row (%s)", src.Host, firstLine(p.dmon))}
		return false
	}
	src.Source, src.Energy = SourceDmon, "power_integral"
	src.Notes = append(src.Notes, "energy is mean sampled power × time (nvidia-smi dmon has no energy counter): an estimate")
	if p.dcgmi {
		src.Notes = append(src.Notes, "dcgmi is on the host; the sampler reads nvidia-smi dmon")
	}
	peak := 0.0
	for _, l := range smi.NVLinkStatus(p.nvlink) {
		sum := 0.0
		for _, v := range l {
			sum += v
		}
		peak = max(peak, sum)
	}
	src.NVLinkPeakGBs = peak
	switch {
	case peak == 0:
		src.Notes = append(src.Notes, fmt.Sprintf("no NVLink on %s: link traffic is PCIe only", src.Host))
	case !gpm:
		src.Notes = append(src.Notes, fmt.Sprintf("NVLink on %s, but its dmon has no NVLink counters (GPM metrics need Hopper or later): NVLink traffic is not measured", src.Host))
	default:
		src.NVLink = true
	}
	gpm = gpm && src.NVLink
	src.Command = smi.DmonCommand(1, gpm)
	return gpm
}

// dmonGPUs counts the distinct GPUs in one round of dmon output.
func dmonGPUs(text string) int {
	var d smi.Dmon
	seen := map[int]bool{}
	for _, line := range strings.Split(text, "\n") {
		if r, ok := d.Line(line); ok {
			seen[r.Index] = true
		}
	}
	return len(seen)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	if s == "" {
		return "no output"
	}
	return strconv.Quote(s)
}

func oneLine(err error) string {
	if err == nil {
		return "ended"
	}
	s := remote.ScrubSecrets(strings.Join(strings.Fields(err.Error()), " "))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
