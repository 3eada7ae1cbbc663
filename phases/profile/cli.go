// Package profile is the profile phase: it captures a torch profile of the
// serving engine (vLLM's /start_profile and /stop_profile around a short
// fixed load), finds the profiler's output on the host and summarises it:
// device time by category (GEMM, attention, MoE, communication, other), the
// top kernels, and the communication share of GPU time and per decode step.
// ParseTable and ParseTrace read key_averages tables and Chrome traces.
package profile

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/hosts"
	"github.com/profdeck/profdeck/remote/sim"
	"github.com/profdeck/profdeck/report/campaign"
)

// ParseTableMain is `profdeck parse profiler-table FILE`: it reads a
// key_averages table or a trace (.json, .json.gz) and prints the summary as
// JSON.
func ParseTableMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parse profiler-table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	top := fs.Int("top", TopN, "how many kernels to list")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck parse profiler-table [--top N] FILE\n\nFILE is a torch.profiler key_averages table (vLLM's profiler_out_0.txt, or a log that holds one),\nor a Chrome trace (.json or .json.gz). Prints device-kernel time by category as JSON.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	name := fs.Arg(0)
	s, err := ParseFile(name, *top)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck parse profiler-table: %s: %v\n", name, err)
		return 1
	}
	if err := writeJSON(stdout, s); err != nil {
		fmt.Fprintln(stderr, "profdeck parse profiler-table:", err)
		return 1
	}
	return 0
}

// ParseFile summarises a local table or trace file; a trace is told from a
// table by its first non-blank byte ({ or [) or the gzip magic bytes.
func ParseFile(name string, top int) (*phases.ProfileSummary, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var s *phases.ProfileSummary
	if looksLikeTrace(head) {
		s, err = parseTrace(f, top, MaxTraceBytes)
	} else {
		s, err = parseTable(f, top)
	}
	if err != nil {
		return nil, err
	}
	s.Source = name + " (" + s.Source + ")"
	return s, nil
}

func looksLikeTrace(head []byte) bool {
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		return true
	}
	t := strings.TrimLeft(string(head), " \t\r\n\ufeff")
	return strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")
}

// output is the JSON the commands print: the summary's fields in the
// documented shape, plus the capture's context.
func writeJSON(w io.Writer, s *phases.ProfileSummary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// Main is `profdeck profile`: one capture against the campaign's server.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", campaign.DefaultPath, "campaign file")
	requests := fs.Int("requests", 0, "requests per concurrency level (default: the campaign's profile.requests)")
	conc := fs.String("concurrency", "1", "comma-separated concurrency levels of the profiled load, e.g. 1,128")
	jsonOut := fs.String("json", "", "write the summary as JSON to FILE (- for stdout)")
	host := fs.String("host", "", "override the campaign's host (sim, local, or an SSH target)")
	dir := fs.String("profiler-dir", "", "the server's torch profiler directory on the host (default: the campaign's server.profiler_dir, else "+DefaultProfilerDir+")")
	stopTimeout := fs.Duration("stop-timeout", 30*time.Minute, "how long to wait for stop_profile while traces flush")
	top := fs.Int("top", TopN, "how many kernels to list")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck profile [-c FILE] [--requests N] [--concurrency 1,C] [--json FILE|-]\n\nCaptures a torch profile of the running server (it must have been started with the torch profiler)\nand summarises where the GPU time went.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	levels, err := parseLevels(*conc)
	if err != nil {
		fmt.Fprintln(stderr, "profdeck profile: --concurrency:", err)
		return 2
	}
	c, err := loadCampaign(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, "profdeck profile:", err)
		return 2
	}
	if *host != "" {
		c.Host = *host
	}
	h, err := hosts.Open(ctx, c.Host, hosts.Options{Identity: c.SSH.Identity, KnownHosts: c.SSH.KnownHosts,
		SSHConfig: c.SSH.Config, AcceptNewHostKey: c.SSH.AcceptNewHostKey, Sim: sim.Options{LoadTime: 3 * time.Second}})
	if err != nil {
		fmt.Fprintln(stderr, "profdeck profile:", err)
		return 1
	}
	defer h.Close()
	cfg := Config{Host: h, URL: c.Server.URL, Model: c.Model.Name, API: c.Macro.API, ProfilerDir: firstNonEmpty(*dir, c.Server.ProfilerDir),
		Requests: c.Profile.Requests, Concurrency: levels, InputLen: c.Macro.InputLen, OutputLen: c.Macro.OutputLen,
		StopTimeout: *stopTimeout, Top: *top}
	if c.Server.APIKeyEnv != "" {
		cfg.APIKey = os.Getenv(c.Server.APIKeyEnv)
	}
	if *requests > 0 {
		cfg.Requests = *requests
	}
	if d, ok := h.(*sim.Deployment); ok {
		fmt.Fprintln(stderr, "SIMULATED deployment: starting its server with the torch profiler")
		if err := PrepareSim(ctx, d, cfg.ProfilerDir); err != nil {
			fmt.Fprintln(stderr, "profdeck profile:", err)
			return 1
		}
		cfg.URL = "http://" + d.Options().ServerAddr
	}
	events := make(chan phases.Event, 64)
	em := &phases.Emitter{Out: events}
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := ""
		for ev := range events {
			if st, ok := ev.Data.(phases.ProfileStep); ok {
				line := st.Step + ": " + st.Detail
				switch {
				case st.Done:
					fmt.Fprintf(stderr, "%-13s done in %5.1fs  %s\n", st.Step, st.ElapsedS, st.Detail)
				case st.ElapsedS == 0 && line != last:
					fmt.Fprintf(stderr, "%-13s %s\n", st.Step, st.Detail)
				case st.Step == "stop_profile" && int(st.ElapsedS)%15 == 0 && int(st.ElapsedS) > 0:
					fmt.Fprintf(stderr, "%-13s still flushing after %.0fs\n", st.Step, st.ElapsedS)
				}
				last = line
			}
		}
	}()
	s, err := Capture(ctx, cfg, em)
	close(events)
	<-done
	if err != nil {
		fmt.Fprintln(stderr, "profdeck profile:", err)
		if errors.Is(err, ErrProfilerDisabled) || errors.Is(err, ErrServerDown) {
			return 3
		}
		return 1
	}
	human := stdout
	if *jsonOut == "-" {
		human = stderr // stdout carries the JSON alone
	}
	printSummary(human, s, remote.IsSimulated(h))
	if *jsonOut != "" {
		w := stdout
		if *jsonOut != "-" {
			f, err := os.Create(*jsonOut)
			if err != nil {
				fmt.Fprintln(stderr, "profdeck profile:", err)
				return 1
			}
			defer f.Close()
			w = f
		}
		if err := writeJSON(w, s); err != nil {
			fmt.Fprintln(stderr, "profdeck profile:", err)
			return 1
		}
	}
	return 0
}

func loadCampaign(path string) (*campaign.Campaign, error) {
	c, err := campaign.LoadFile(path)
	if err != nil && path == campaign.DefaultPath && errors.Is(err, os.ErrNotExist) {
		return campaign.Defaults(), nil
	}
	return c, err
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("%q is not a concurrency (1-4096)", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no levels")
	}
	return out, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// printSummary writes the human-readable summary.
func printSummary(w io.Writer, s *phases.ProfileSummary, simulated bool) {
	if simulated {
		fmt.Fprintln(w, "SIMULATED")
	}
	fmt.Fprintf(w, "source: %s\n", s.Source)
	fmt.Fprintf(w, "GPU time %s in %d kernels; communication %.1f%% of it\n", fmtUs(s.TotalCUDAUs), s.KernelCount, 100*s.CommunicationShare)
	if s.DecodeSteps > 0 {
		fmt.Fprintf(w, "per decode step: %s GPU, %s communication (%d steps: %s)\n", fmtUs(s.GPUPerStepUs), fmtUs(s.CommPerStepUs), s.DecodeSteps, s.DecodeStepsSource)
	}
	for _, c := range Categories {
		v := s.Categories[c]
		fmt.Fprintf(w, "  %-14s %12s %6.1f%%\n", c, fmtUs(v), pctOf(v, s.TotalCUDAUs))
	}
	fmt.Fprintln(w, "top kernels by self CUDA time:")
	for _, k := range s.Top {
		fmt.Fprintf(w, "  %12s %6.1f%% %8d  %-13s %s\n", fmtUs(k.SelfCUDAUs), pctOf(k.SelfCUDAUs, s.TotalCUDAUs), k.Calls, k.Category, Shorten(k.Name, 70))
	}
	for _, n := range s.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func pctOf(v, total float64) float64 {
	if total <= 0 {
		return 0
	}
	return 100 * v / total
}

// fmtUs formats microseconds for people: 812.3µs, 12.41ms, 3.02s.
func fmtUs(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2fms", us/1e3)
	}
	return fmt.Sprintf("%.1fµs", us)
}
