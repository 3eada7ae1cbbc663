package profile

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// fileInfo is one file of the profiler directory.
type fileInfo struct {
	path  string
	size  int64
	mtime string // as find prints it (seconds.fraction), compared as text
}

func (f fileInfo) mtimeF() float64 { v, _ := strconv.ParseFloat(f.mtime, 64); return v }

// listDir lists the files under dir (two levels) on the host. A directory
// that does not exist yet is empty: the profiler creates it.
func listDir(ctx context.Context, h remote.Host, dir string) (map[string]fileInfo, error) {
	cmd := "find " + remote.QuotePath(dir) + ` -maxdepth 2 -type f -printf '%T@ %s %p\n'`
	out, err := remote.Output(ctx, h, cmd)
	files := map[string]fileInfo{}
	if err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) && strings.TrimSpace(out) == "" && strings.Contains(ee.Error(), "No such file") {
			return files, nil
		}
		return nil, fmt.Errorf("listing the profiler directory %s on %s: %w", dir, h.Name(), err)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) != 3 {
			continue
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		files[f[2]] = fileInfo{path: f[2], size: size, mtime: f[0]}
	}
	return files, nil
}

// isTrace reports whether name is a torch trace file.
func isTrace(name string) bool {
	return strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".json.gz")
}

// rank0 reports whether a trace file name is rank 0's, as vLLM names them
// (…rank0…, …tp0…, or worker_0…).
func rank0(name string) bool {
	b := strings.ToLower(path.Base(name))
	for _, p := range []string{"rank0.", "rank0_", "rank_0", "tp0_", "tp0.", "_0.", "-0."} {
		if strings.Contains(b, p) {
			return true
		}
	}
	return false
}

// pickOutputs chooses what to summarise among the new files: rank 0's
// key_averages table (profiler_out_0.txt) when there is one, otherwise the
// newest rank-0 trace, otherwise the newest trace.
func pickOutputs(files []fileInfo) (table, trace *fileInfo) {
	var traces []fileInfo
	for i := range files {
		f := files[i]
		base := path.Base(f.path)
		if base == "profiler_out_0.txt" {
			table = &files[i]
		}
		if isTrace(base) {
			traces = append(traces, f)
		}
	}
	sort.SliceStable(traces, func(i, j int) bool {
		ri, rj := rank0(traces[i].path), rank0(traces[j].path)
		if ri != rj {
			return ri
		}
		return traces[i].mtimeF() > traces[j].mtimeF()
	})
	if len(traces) > 0 {
		trace = &traces[0]
	}
	return table, trace
}

// summarise reads the chosen output: the table, else the trace (on the host
// with Python when it is larger than cfg.RemoteOver).
func summarise(ctx context.Context, cfg Config, files []fileInfo, progress func(string)) (*phases.ProfileSummary, error) {
	table, trace := pickOutputs(files)
	var notes []string
	if table != nil {
		progress("reading " + table.path)
		b, err := cfg.Host.ReadFile(ctx, table.path)
		if err == nil {
			s, perr := parseTable(bytes.NewReader(b), cfg.Top)
			if perr == nil && s.TotalCUDAUs > 0 {
				s.Source = table.path + " (" + s.Source + ")"
				if trace != nil {
					// The table has the times; the trace has the steps.
					s.TraceSteps, s.TraceStepsFrom, err = traceSteps(ctx, cfg, *trace, progress)
					if err != nil && ctx.Err() == nil {
						s.Notes = append(s.Notes, fmt.Sprintf("counting the steps in %s: %v", trace.path, err))
					}
				}
				return s, nil
			}
			if perr == nil {
				perr = errors.New("no device time in it")
			}
			err = perr
		}
		notes = append(notes, fmt.Sprintf("%s: %v; read the trace instead", table.path, err))
		if trace == nil {
			return nil, fmt.Errorf("%s: %w (and no trace file to fall back on)", table.path, err)
		}
	}
	if trace == nil {
		return nil, fmt.Errorf("no profiler_out_0.txt and no trace (.json, .json.gz) among the new files in %s", cfg.ProfilerDir)
	}
	var s *phases.ProfileSummary
	var err error
	local := trace.size <= cfg.RemoteOver
	if local {
		// The limit holds for the decompressed bytes: a small .json.gz may
		// hold gigabytes, and is then summarised on the host too.
		progress("reading " + trace.path)
		var b []byte
		b, err = cfg.Host.ReadFile(ctx, trace.path)
		if err == nil {
			s, err = parseTrace(bytes.NewReader(b), cfg.Top, cfg.RemoteOver)
		}
		if errors.Is(err, ErrTraceTooLarge) {
			notes = append(notes, fmt.Sprintf("%s is over %d MiB once decompressed: summarised on the host", trace.path, cfg.RemoteOver>>20))
			local = false
		}
	}
	if !local {
		progress(fmt.Sprintf("summarising %s (%.0f MB) on the host", trace.path, float64(trace.size)/1e6))
		s, err = summariseOnHost(ctx, cfg, trace.path)
		if err != nil && ctx.Err() == nil {
			notes = append(notes, fmt.Sprintf("summarising on the host failed (%v); streamed the trace over the connection instead", err))
			progress(fmt.Sprintf("streaming %s (%.0f MB) over the connection", trace.path, float64(trace.size)/1e6))
			s, err = streamTrace(ctx, cfg, trace.path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", trace.path, err)
	}
	s.Source = trace.path + " (" + s.Source + ")"
	s.Notes = append(notes, s.Notes...)
	return s, nil
}

//go:embed summarize_trace.py
var summarizeScript string

// summariseOnHost runs the embedded script on the host: it streams the
// trace there and prints per-kernel totals, so only a few kB come back.
func summariseOnHost(ctx context.Context, cfg Config, file string) (*phases.ProfileSummary, error) {
	cmd := cfg.Python + " - " + remote.Quote(file)
	out, err := runWithStdin(ctx, cfg.Host, cmd, summarizeScript)
	if err != nil {
		return nil, fmt.Errorf("summarising on the host (%s): %w", cfg.Python, err)
	}
	return parseHostSummary([]byte(out), cfg.Top)
}

// parseHostSummary reads the script's JSON: {"events": n, "kernels": [[name, us, calls], ...]}.
func parseHostSummary(b []byte, top int) (*phases.ProfileSummary, error) {
	var res struct {
		Events  int            `json:"events"`
		Kernels [][]any        `json:"kernels"`
		Marks   map[string]int `json:"marks"`
		Error   string         `json:"error"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("the host script's output is not JSON: %w", err)
	}
	if res.Error != "" {
		return nil, errors.New(res.Error)
	}
	agg := newKernelAgg()
	for _, k := range res.Kernels {
		if len(k) != 3 {
			continue
		}
		name, _ := k[0].(string)
		us, _ := k[1].(float64)
		calls, _ := k[2].(float64)
		agg.add(name, us, int(calls))
	}
	for k, n := range res.Marks {
		cat, name, _ := strings.Cut(k, "\t")
		if stepMarkers[name] && n > 0 && n < 1<<30 {
			agg.marks[cat+"\x00"+name] += n
		}
	}
	if len(agg.order) == 0 {
		return nil, fmt.Errorf("trace: %d events but no device kernels", res.Events)
	}
	return agg.summary(fmt.Sprintf("trace summarised on the host: %d device kernels over %d events", len(agg.order), res.Events), 0, top), nil
}

// streamTrace reads a trace through `cat` (or `gzip -dc`) on the host and
// parses it as it arrives, so a large trace is never held whole.
func streamTrace(ctx context.Context, cfg Config, file string) (*phases.ProfileSummary, error) {
	cmd := "cat " + remote.Quote(file)
	if strings.HasSuffix(file, ".gz") {
		cmd = "gzip -dc " + remote.Quote(file)
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errb strings.Builder
	go func() {
		err := cfg.Host.Run(ctx, cmd, nil, func(l remote.Line) {
			if l.Stream == remote.Stderr {
				if errb.Len() < 2048 {
					errb.WriteString(l.Text + "\n")
				}
				return
			}
			// No newline between lines: the host cuts a line longer than its
			// line limit into pieces, and a newline put back between two
			// pieces would land inside a JSON string. JSON needs no newline
			// between tokens, and has none inside strings.
			_, _ = io.WriteString(pw, l.Text)
		})
		if err != nil && errb.Len() > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
		}
		pw.CloseWithError(err)
	}()
	s, err := parseTrace(pr, cfg.Top, MaxTraceBytes)
	pr.CloseWithError(io.ErrClosedPipe) // stop the writer if the parser stopped early
	return s, err
}

func runWithStdin(ctx context.Context, h remote.Host, cmd, stdin string) (string, error) {
	var out, errb strings.Builder
	err := h.Run(ctx, cmd, strings.NewReader(stdin), func(l remote.Line) {
		if l.Stream == remote.Stdout {
			out.WriteString(l.Text)
			out.WriteByte('\n')
		} else {
			errb.WriteString(l.Text)
			errb.WriteByte('\n')
		}
	})
	if ee, ok := err.(*remote.ExitError); ok && ee.Stderr == "" {
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if len(lines) > 5 {
			lines = lines[len(lines)-5:]
		}
		ee.Stderr = strings.Join(lines, "\n")
	}
	return out.String(), err
}

// traceSteps counts the engine steps in a trace: read here when small,
// summarised on the host otherwise.
func traceSteps(ctx context.Context, cfg Config, trace fileInfo, progress func(string)) (int, string, error) {
	if trace.size <= cfg.RemoteOver {
		progress("counting steps in " + trace.path)
		b, err := cfg.Host.ReadFile(ctx, trace.path)
		if err == nil {
			var agg *kernelAgg
			if agg, _, err = scanTrace(bytes.NewReader(b), cfg.RemoteOver); err == nil {
				n, from := agg.steps()
				return n, from, nil
			}
		}
		if !errors.Is(err, ErrTraceTooLarge) {
			return 0, "", err
		}
	}
	progress(fmt.Sprintf("counting steps in %s (%.0f MB) on the host", trace.path, float64(trace.size)/1e6))
	s, err := summariseOnHost(ctx, cfg, trace.path)
	if err != nil {
		return 0, "", err
	}
	return s.TraceSteps, s.TraceStepsFrom, nil
}
