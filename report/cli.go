package report

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// parseInterleaved parses flags that may come before or after the
// positional arguments ("report J -o F" as well as "report -o F J").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseArgs parses args as parseInterleaved does and wants exactly n
// positional arguments. When ok is false the command ends with code: 0
// after -h, 2 after a bad flag or a wrong count (the usage was printed).
func parseArgs(fs *flag.FlagSet, args []string, n int) (pos []string, code int, ok bool) {
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, 0, false
	}
	if err != nil {
		return nil, 2, false
	}
	if len(pos) != n {
		fs.Usage()
		return nil, 2, false
	}
	return pos, 0, true
}

// defaultNotebookPath is the journal's path with a .md extension.
func defaultNotebookPath(journal string) string {
	ext := filepath.Ext(journal)
	if ext == ".md" {
		return journal + ".md"
	}
	return strings.TrimSuffix(journal, ext) + ".md"
}

// ReportMain renders a notebook from a journal:
// report JOURNAL [-o FILE] [--campaign NAME] [--no-charts].
func ReportMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "notebook to write (default: the journal's name with .md; - for stdout, without charts)")
	name := fs.String("campaign", "", "campaign name for the title (default: the one in the journal)")
	noCharts := fs.Bool("no-charts", false, "do not draw the SVG charts beside the notebook")
	utc := fs.Bool("utc", false, "print times in UTC instead of the local time zone")
	png := fs.Bool("png", false, "draw the charts as PNG instead of SVG")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck report JOURNAL [-o FILE] [--campaign NAME] [--no-charts] [--png] [--utc]")
		fmt.Fprintln(stderr, "Renders the markdown notebook (and its charts) from a campaign journal.")
		fs.PrintDefaults()
	}
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	journal := pos[0]
	rr, err := ReadJournalFile(journal)
	if err != nil {
		fmt.Fprintf(stderr, "profdeck report: %v\n", err)
		return 2 // bad input: no such journal, or not a file
	}
	if note := skippedNote(journal, rr.Skipped, rr.SkippedCount); note != "" {
		fmt.Fprintln(stderr, "profdeck report: "+note)
	}
	if len(rr.Events) == 0 {
		fmt.Fprintf(stderr, "profdeck report: %s: no events could be read; not a profdeck journal?\n", journal)
		return 2
	}
	opts := NotebookOptions{Campaign: *name, Journal: journal, NoCharts: *noCharts, Skipped: rr.Skipped, SkippedCount: rr.SkippedCount}
	if *png {
		opts.ChartFormat = "png"
	}
	if *utc {
		opts.Location = time.UTC
	}
	if *out == "-" {
		md, _ := RenderNotebook(rr.Events, opts)
		if _, err := stdout.Write(md); err != nil {
			fmt.Fprintf(stderr, "profdeck report: %v\n", err)
			return 1
		}
		return 0
	}
	path := *out
	if path == "" {
		path = defaultNotebookPath(journal)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fmt.Fprintf(stderr, "profdeck report: %v\n", err)
		return 1
	}
	if err := WriteNotebook(path, rr.Events, opts); err != nil {
		var ce *ChartsError
		if !errors.As(err, &ce) {
			fmt.Fprintf(stderr, "profdeck report: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "profdeck report: %v\n", err)
	}
	fmt.Fprintf(stdout, "wrote %s (%d events", path, len(rr.Events))
	if rr.SkippedCount > 0 {
		fmt.Fprintf(stdout, ", %d lines skipped", rr.SkippedCount)
	}
	fmt.Fprintln(stdout, ")")
	if !*noCharts {
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), chartsDirFor(path))); err == nil {
			fmt.Fprintf(stdout, "charts in %s\n", filepath.Join(filepath.Dir(path), chartsDirFor(path)))
		}
	}
	return 0
}

// CompareMain prints B's per-level change relative to A: compare A B, each
// a journal or a `sweep --json` document.
func CompareMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profdeck compare A B [--json]")
		fmt.Fprintln(stderr, "A and B are campaign journals or `profdeck sweep --json` files (one of each is fine);")
		fmt.Fprintln(stderr, "JOURNAL#N picks a journal's Nth sweep (#-1 the last), e.g. compare k25.jsonl#1 k25.jsonl#2.")
		fmt.Fprintln(stderr, "Prints each level's metrics in A and B and B's change relative to A.")
		fs.PrintDefaults()
	}
	pos, code, ok := parseArgs(fs, args, 2)
	if !ok {
		return code
	}
	var sw [2]Sweep
	for i, p := range pos {
		s, err := LoadSweep(p)
		if err != nil {
			fmt.Fprintf(stderr, "profdeck compare: %v\n", err)
			return 2 // bad input: a missing or wrong file
		}
		if note := skippedNote(p, s.Skipped, s.SkippedCount); note != "" {
			fmt.Fprintln(stderr, "profdeck compare: "+note)
		}
		sw[i] = s
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(Compare(sw[0], sw[1])); err != nil {
			fmt.Fprintf(stderr, "profdeck compare: %v\n", err)
			return 1
		}
		return 0
	}
	WriteComparison(stdout, sw[0], sw[1])
	return 0
}
