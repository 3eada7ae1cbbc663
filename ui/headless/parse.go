package headless

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/phases/load/enginelog"
	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/phases/profile"
	"github.com/profdeck/profdeck/remote/localfs"
)

// parseNote ends the usage of every `profdeck parse` command.
const parseNote = `

Prints what it read as JSON on stdout, or writes it to --json FILE. It reads
the one local file it names (- for standard input): no -c, --host or --jsonl.
Exit 0, 1 when the JSON cannot be written, 2 for bad input.`

// newParseCommand is `profdeck parse NAME` on the shared harness: --json
// FILE|- (default stdout) and exactly one file.
func newParseCommand(name, usage string, stdout, stderr io.Writer) *Command {
	c := newCommand("parse "+name, usage+parseNote, stdout, stderr)
	c.Flags.StringVar(&c.JSONPath, "json", "-", "write the JSON to FILE (- for stdout)")
	return c
}

// parseFile parses args and returns the one file named.
func (c *Command) parseFile(args []string) (string, error) {
	files, err := c.ParseFiles(args, 1)
	if err != nil {
		return "", err
	}
	return files[0], c.CheckOverlap(localfs.Named{Name: "the file parsed", Path: files[0]})
}

// readInput opens the file name (standard input for "-") for read.
func readInput(name string, read func(io.Reader) error) error {
	var r io.ReadCloser = io.NopCloser(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return BadInput("%s: %v", name, localfs.UnwrapPath(err))
		}
		r = f
	}
	defer r.Close()
	return read(r)
}

// ParseLogMain is `profdeck parse vllm-log FILE`: the log's summary as JSON.
// The engine that wrote the log (vLLM or SGLang) is told from the log
// itself, under either name.
func ParseLogMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return parseLog(ctx, "vllm-log", args, stdout, stderr)
}

// ParseSGLangLogMain is `profdeck parse sglang-log FILE`: the same reader
// as vllm-log (it tells the engine by itself).
func ParseSGLangLogMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return parseLog(ctx, "sglang-log", args, stdout, stderr)
}

func parseLog(ctx context.Context, format string, args []string, stdout, stderr io.Writer) int {
	c := newParseCommand(format, "profdeck parse "+format+" [--json FILE|-] FILE\n\n"+
		"FILE is a vLLM or SGLang server log; which engine wrote it is read from the log (\"engine\").", stdout, stderr)
	name, err := c.parseFile(args)
	if err == nil {
		err = readInput(name, func(r io.Reader) error {
			in := &inputCheck{r: r}
			sum, err := enginelog.Read(in)
			if err == nil {
				err = in.notText()
			}
			if err != nil {
				return BadInput("%s: %v", name, err)
			}
			for _, d := range sum.Dropped {
				fmt.Fprintf(c.Stderr, "profdeck %s: %s: warning: %s\n", c.Name, name, d)
			}
			return c.WriteJSON(sum)
		})
	}
	return c.Exit(ctx, err)
}

// ParseSMIMain is `profdeck parse nvidia-smi FILE`: one reading per GPU as JSON.
func ParseSMIMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newParseCommand("nvidia-smi", "profdeck parse nvidia-smi [--fields a,b,c] [--json FILE|-] FILE\n\n"+
		"FILE is nvidia-smi's table, its CSV with or without header and units, dmon, or -L.", stdout, stderr)
	fields := c.Flags.String("fields", "", "columns of a CSV without header, as given to --query-gpu (default "+strings.Join(smi.QueryFields, ",")+")")
	name, err := c.parseFile(args)
	if err == nil {
		err = readInput(name, func(r io.Reader) error { return parseSMI(c, name, r, *fields) })
	}
	return c.Exit(ctx, err)
}

func parseSMI(c *Command, name string, r io.Reader, fields string) error {
	var names []string
	if fields != "" {
		for _, f := range strings.Split(fields, ",") {
			names = append(names, strings.TrimSpace(f))
		}
	}
	text, cut, dropped, err := smi.ReadText(r)
	if err != nil {
		return BadInput("reading %s: %v", name, err)
	}
	if cut {
		fmt.Fprintf(c.Stderr, "profdeck %s: %s is over %d MiB: only its first %d MiB were read\n", c.Name, name, smi.MaxInput>>20, smi.MaxInput>>20)
	}
	if dropped > 0 {
		fmt.Fprintf(c.Stderr, "profdeck %s: %s: %d line(s) longer than %d KiB skipped\n", c.Name, name, dropped, smi.MaxLine>>10)
	}
	gpus := smi.Parse(text, names)
	tab := smi.ReadTable(text)
	if len(gpus) == 0 && len(tab.MIGDevices) == 0 && len(tab.Processes) == 0 {
		return BadInput("no GPU readings found in %s", name)
	}
	if gpus == nil {
		gpus = []smi.GPU{}
	}
	return c.WriteJSON(map[string]any{"gpus": gpus, "mig": tab.MIG, "mig_devices": tab.MIGDevices, "processes": tab.Processes})
}

// ParseMetricsMain is `profdeck parse metrics FILE`: it reads a saved
// /metrics text (- for standard input) and prints the figures profdeck
// takes from it as JSON.
func ParseMetricsMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newParseCommand("metrics", "profdeck parse metrics [--json FILE|-] FILE   (a saved /metrics text)", stdout, stderr)
	name, err := c.parseFile(args)
	if err == nil {
		err = readInput(name, func(r io.Reader) error {
			in := &inputCheck{r: r}
			snap, err := servermetrics.Parse(in)
			if err == nil && len(snap.Found) == 0 {
				err = in.notText()
			}
			if err != nil {
				return BadInput("%s: %v", name, err)
			}
			for _, d := range snap.Dropped {
				fmt.Fprintf(c.Stderr, "profdeck %s: %s: warning: %s\n", c.Name, name, d)
			}
			return c.WriteJSON(servermetrics.FiguresOf(name, snap))
		})
	}
	return c.Exit(ctx, err)
}

// ParseProfilerMain is `profdeck parse profiler-table FILE`: it reads a
// key_averages table or a trace (.json, .json.gz) and prints the summary
// as JSON.
func ParseProfilerMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newParseCommand("profiler-table", "profdeck parse profiler-table [--top N] [--json FILE|-] FILE\n\n"+
		"FILE is a torch.profiler key_averages table (vLLM's profiler_out_0.txt, or a log that holds one),\n"+
		"or a Chrome trace (.json or .json.gz). Prints device-kernel time by category.", stdout, stderr)
	top := c.Flags.Int("top", campaign.DefaultProfileTop, "how many kernels to list")
	name, err := c.parseFile(args)
	if err == nil && *top < 1 {
		err = BadInput("--top: must be at least 1, got %d", *top)
	}
	if err == nil {
		err = parseProfiler(c, name, *top)
	}
	return c.Exit(ctx, err)
}

func parseProfiler(c *Command, name string, top int) error {
	s, err := profile.ParseFile(name, top)
	if err != nil {
		return BadInput("%s: %v", name, localfs.UnwrapPath(err))
	}
	return c.WriteJSON(s)
}

// inputCheck passes a file through and notes whether it was empty or
// binary, so that a parser that takes anything can say which.
type inputCheck struct {
	r        io.Reader
	n        int64
	nonSpace bool
	nul      bool
}

func (c *inputCheck) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	for _, b := range p[:n] {
		switch {
		case b == 0:
			c.nul = true
		case b != ' ' && b != '\t' && b != '\r' && b != '\n':
			c.nonSpace = true
		}
	}
	return n, err
}

// notText is an error when what was read is empty or binary.
func (c *inputCheck) notText() error {
	switch {
	case !c.nonSpace:
		return fmt.Errorf("empty (%d bytes, no text)", c.n)
	case c.nul:
		return fmt.Errorf("binary (NUL bytes), not a text file")
	}
	return nil
}
