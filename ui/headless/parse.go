package headless

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/profdeck/profdeck/phases/load/smi"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
	"github.com/profdeck/profdeck/phases/macro/servermetrics"
	"github.com/profdeck/profdeck/phases/profile"
)

// parseCommand is the flag set of `profdeck parse NAME`; it parses args
// and wants exactly one file. When ok is false the command ends with code.
func parseCommand(name, usage string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (file string, code int, ok bool) {
	fs := flag.NewFlagSet("parse "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if extra != nil {
		extra(fs)
	}
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return "", ExitOK, false
		}
		return "", ExitBadInput, false
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return "", ExitBadInput, false
	}
	return fs.Arg(0), 0, true
}

// withInput opens the file name (standard input for "-") for read, which
// returns the exit status; a file that does not open is said on stderr.
func withInput(cmd, name string, stderr io.Writer, read func(io.Reader) int) int {
	var r io.ReadCloser = io.NopCloser(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "profdeck parse %s: %v\n", cmd, err)
			return ExitBadInput
		}
		r = f
	}
	defer r.Close()
	return read(r)
}

// ParseLogMain is `profdeck parse vllm-log FILE`: the log's summary as JSON.
func ParseLogMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, code, ok := parseCommand("vllm-log", "profdeck parse vllm-log FILE   (- reads standard input)", args, stderr, nil)
	if !ok {
		return code
	}
	return withInput("vllm-log", name, stderr, func(r io.Reader) int {
		in := &inputCheck{r: r}
		sum, err := vllmlog.Read(in)
		if err == nil {
			err = in.notText()
		}
		if err != nil {
			fmt.Fprintf(stderr, "profdeck parse vllm-log: %s: %v\n", name, err)
			return ExitBadInput
		}
		printJSON(stdout, sum)
		return ExitOK
	})
}

// ParseSMIMain is `profdeck parse nvidia-smi FILE`: one reading per GPU as JSON.
func ParseSMIMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var fields string
	name, code, ok := parseCommand("nvidia-smi", "profdeck parse nvidia-smi [--fields a,b,c] FILE   (table, CSV with or without header/units, dmon, -L; - reads standard input)",
		args, stderr, func(fs *flag.FlagSet) {
			fs.StringVar(&fields, "fields", "", "columns of a CSV without header, as given to --query-gpu (default "+strings.Join(smi.QueryFields, ",")+")")
		})
	if !ok {
		return code
	}
	var names []string
	if fields != "" {
		for _, f := range strings.Split(fields, ",") {
			names = append(names, strings.TrimSpace(f))
		}
	}
	return withInput("nvidia-smi", name, stderr, func(r io.Reader) int {
		text, cut, dropped, err := smi.ReadText(r)
		if err != nil {
			fmt.Fprintf(stderr, "profdeck parse nvidia-smi: reading %s: %v\n", name, err)
			return ExitBadInput
		}
		if cut {
			fmt.Fprintf(stderr, "profdeck parse nvidia-smi: %s is over %d MiB: only its first %d MiB were read\n", name, smi.MaxInput>>20, smi.MaxInput>>20)
		}
		if dropped > 0 {
			fmt.Fprintf(stderr, "profdeck parse nvidia-smi: %s: %d line(s) longer than %d KiB skipped\n", name, dropped, smi.MaxLine>>10)
		}
		gpus := smi.Parse(text, names)
		if len(gpus) == 0 {
			fmt.Fprintf(stderr, "profdeck parse nvidia-smi: no GPU readings found in %s\n", name)
			return ExitBadInput
		}
		printJSON(stdout, map[string]any{"gpus": gpus})
		return ExitOK
	})
}

// ParseMetricsMain is `profdeck parse metrics FILE`: it reads a saved
// /metrics text (- for standard input) and prints the figures profdeck
// takes from it as JSON.
func ParseMetricsMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, code, ok := parseCommand("metrics", "profdeck parse metrics FILE   (a saved /metrics text; - reads standard input)", args, stderr, nil)
	if !ok {
		return code
	}
	return withInput("metrics", name, stderr, func(r io.Reader) int {
		in := &inputCheck{r: r}
		snap, err := servermetrics.Parse(in)
		if err == nil && len(snap.Found) == 0 {
			err = in.notText()
		}
		if err != nil {
			fmt.Fprintf(stderr, "profdeck parse metrics: %s: %v\n", name, err)
			return ExitBadInput
		}
		if err := printJSON(stdout, servermetrics.FiguresOf(name, snap)); err != nil {
			fmt.Fprintf(stderr, "profdeck parse metrics: %v\n", err)
			return ExitCannotRun
		}
		return ExitOK
	})
}

// ParseProfilerMain is `profdeck parse profiler-table FILE`: it reads a
// key_averages table or a trace (.json, .json.gz) and prints the summary
// as JSON.
func ParseProfilerMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	top := profile.TopN
	name, code, ok := parseCommand("profiler-table", "profdeck parse profiler-table [--top N] FILE\n\n"+
		"FILE is a torch.profiler key_averages table (vLLM's profiler_out_0.txt, or a log that holds one),\n"+
		"or a Chrome trace (.json or .json.gz). Prints device-kernel time by category as JSON.",
		args, stderr, func(fs *flag.FlagSet) { fs.IntVar(&top, "top", profile.TopN, "how many kernels to list") })
	if !ok {
		return code
	}
	s, err := profile.ParseFile(name, top)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck parse profiler-table: %s: %v\n", name, unwrapPath(err))
		return ExitBadInput
	}
	if err := printJSON(stdout, s); err != nil {
		fmt.Fprintln(stderr, "profdeck parse profiler-table:", err)
		return ExitCannotRun
	}
	return ExitOK
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
