package headless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/profdeck/profdeck/campaign"
	"github.com/profdeck/profdeck/remote/localfs"
	"github.com/profdeck/profdeck/report"
)

const reportUsage = `profdeck report [JOURNAL | -c FILE] [-o FILE|-] [--campaign NAME] [--no-charts] [--png] [--utc]

Renders the markdown notebook (and its charts) from a campaign journal:
JOURNAL, else the journal of the campaign (-c FILE, or ./profdeck.yaml
when it exists), written to the campaign's notebook. A campaign with a
capacity section (-c FILE, also beside a JOURNAL) gets its capacity plan. It reads local files
only: no --host; the notebook is its result (-o), so no --json or --jsonl.
Exit 0, 1 when the notebook cannot be written, 2 for bad input.`

// ReportMain is "profdeck report": the notebook from a journal.
func ReportMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand("report", reportUsage, stdout, stderr)
	c.flagCampaign()
	fs := c.Flags
	out := fs.String("o", "", "notebook to write (default: the campaign's notebook, else the journal's name with .md; - for stdout, without charts)")
	name := fs.String("campaign", "", "campaign name for the title (default: the one in the journal)")
	noCharts := fs.Bool("no-charts", false, "do not draw the SVG charts beside the notebook")
	utc := fs.Bool("utc", false, "print times in UTC instead of the local time zone")
	png := fs.Bool("png", false, "draw the charts as PNG instead of SVG")
	pos, err := c.parseFiles(args, 0, 1)
	if err != nil {
		return c.Exit(ctx, err)
	}
	journal, notebook, camp, err := reportPaths(c, pos)
	if err != nil {
		return c.Exit(ctx, err)
	}
	if *out != "" {
		notebook = *out
	}
	opts := report.NotebookOptions{Campaign: *name, Journal: journal, NoCharts: *noCharts}
	if camp != nil {
		opts.Capacity, opts.GPUHour = camp.Capacity.Ask(), camp.Cost.GPUHour
	}
	if *png {
		opts.ChartFormat = "png"
	}
	if *utc {
		opts.Location = time.UTC
	}
	return c.Exit(ctx, writeReport(c, journal, notebook, opts))
}

// reportPaths is the journal to read and the notebook to write by default:
// the JOURNAL argument and its name with .md, else the campaign's; camp is
// the campaign when -c names one (or ./profdeck.yaml is read), for its
// capacity section.
func reportPaths(c *Command, pos []string) (journal, notebook string, camp *campaign.Campaign, err error) {
	if len(pos) == 1 {
		if c.CampaignPath != "" {
			if camp, _, err = c.Campaign(); err != nil {
				return "", "", nil, err
			}
		}
		return pos[0], defaultNotebookPath(pos[0]), camp, nil
	}
	camp, fromFile, err := c.Campaign()
	if err != nil {
		return "", "", nil, err
	}
	if !fromFile {
		return "", "", nil, BadInput("need a JOURNAL, or a campaign (-c FILE or ./%s) whose journal to read (see -h)", campaign.DefaultPath)
	}
	journal = camp.JournalPath()
	if camp.Notebook != "" {
		return journal, camp.Notebook, camp, nil
	}
	return journal, defaultNotebookPath(journal), camp, nil
}

// writeReport reads the journal and writes its notebook to path (- for
// stdout), saying on stdout what it wrote.
func writeReport(c *Command, journal, path string, opts report.NotebookOptions) error {
	nb := localfs.Named{Name: "the notebook", Path: path, Output: true}
	if !opts.NoCharts && path != "-" {
		nb.Companions = report.ChartsPath(path)
	}
	if err := c.CheckOverlap(localfs.Named{Name: "the journal", Path: journal}, nb); err != nil {
		return err
	}
	if path != "-" {
		if err := localfs.CheckOutput(path, true); err != nil {
			return BadInput("notebook %s: %v", path, err)
		}
	}
	rr, err := report.ReadJournalFile(journal)
	if errors.Is(err, fs.ErrNotExist) {
		return BadInput("%s: no journal yet: nothing has run in this campaign; `profdeck run` (or a step: sweep, micro, nccl, or the cockpit) writes it", journal)
	}
	if err != nil {
		return &BadInputError{Err: err} // not a file, or unreadable
	}
	if len(rr.Events) == 0 {
		return notAJournal(journal, rr)
	}
	if note := report.SkippedNote(journal, rr.Skipped, rr.SkippedCount); note != "" {
		fmt.Fprintf(c.Stderr, "profdeck %s: %s\n", c.Name, note)
	}
	opts.Skipped, opts.SkippedCount = rr.Skipped, rr.SkippedCount
	if path == "-" {
		md, _ := report.RenderNotebook(rr.Events, opts)
		_, err := c.Stdout.Write(md)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	werr := report.WriteNotebook(path, rr.Events, opts)
	if werr != nil {
		var ce *report.ChartsError
		if !errors.As(werr, &ce) {
			return &StepFailedError{Err: werr}
		}
		fmt.Fprintf(c.Stderr, "profdeck %s: %v\n", c.Name, werr) // the notebook is written
	}
	fmt.Fprintf(c.Stdout, "wrote %s (%d events", path, len(rr.Events))
	if rr.SkippedCount > 0 {
		fmt.Fprintf(c.Stdout, ", %d lines skipped", rr.SkippedCount)
	}
	fmt.Fprintln(c.Stdout, ")")
	if charts := report.ChartsPath(path); !opts.NoCharts && charts != "" {
		if _, err := os.Stat(charts); err == nil {
			fmt.Fprintf(c.Stdout, "charts in %s\n", charts)
		}
	}
	if werr != nil {
		return &StepFailedError{Err: errors.New("some charts could not be written")}
	}
	return nil
}

// defaultNotebookPath is the journal's path with a .md extension.
func defaultNotebookPath(journal string) string {
	ext := filepath.Ext(journal)
	if ext == ".md" {
		return journal + ".md"
	}
	return strings.TrimSuffix(journal, ext) + ".md"
}

const compareUsage = `profdeck compare A B [C …] [-o FILE.md] [--json FILE|-]

A, B, … are campaign journals or ` + "`profdeck sweep --json`" + ` files (any mix);
JOURNAL#N picks a journal's Nth sweep (#-1 the last), e.g. compare k25.jsonl#1 k25.jsonl#2.
Labels the sweeps A, B, C…, says what differs between them (workload, launch, model, TP,
host, profdeck version), prints each level's metrics in A and B and B's change relative
to A (then C's, …), and
the Pareto front of tokens/s per user against tokens/s per GPU over every sweep's levels.
-o writes the same as markdown, with the Pareto chart as SVG and PNG in FILE.charts/ beside
it. --json writes the comparison as a document (- for stdout, the table then goes to
stderr). It reads the files it names only: no -c or --host, and no --jsonl (nothing
happens over time). Exit 0, 1 when the document cannot be written, 2 for bad input.`

// maxCompared is the most sweeps one compare reads.
const maxCompared = 26

// comparisonDoc is compare's result document: B against A as before, the
// later sweeps against A, and the Pareto front.
type comparisonDoc struct {
	report.Comparison
	More []report.Comparison `json:"more,omitempty"`
	// Differs says what differs between the sweeps (workload, launch,
	// model, TP, host, profdeck version), one line each.
	Differs []string      `json:"differs"`
	Pareto  report.Pareto `json:"pareto"`
}

// CompareMain is "profdeck compare": each later sweep's per-level change
// relative to the first, and the Pareto front of them all.
func CompareMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand("compare", compareUsage, stdout, stderr)
	c.flagJSON()
	md := c.Flags.String("o", "", "write the comparison as markdown to FILE, with the Pareto chart (SVG and PNG) beside it")
	pos, err := c.parseFiles(args, 2, maxCompared)
	if err == nil {
		err = notAnInput(c, pos)
	}
	if err == nil && *md != "" {
		err = mdOutput(c, pos, *md)
	}
	if err != nil {
		return c.Exit(ctx, err)
	}
	sw := make([]report.Sweep, len(pos))
	for i, p := range pos {
		if sw[i], err = loadSweep(c, p); err != nil {
			return c.Exit(ctx, err)
		}
	}
	doc := comparisonDoc{Comparison: report.Compare(sw[0], sw[1]), Pareto: report.ParetoOf(sw)}
	h := c.Human()
	if *md == "-" {
		h = c.Stderr // the markdown goes to stdout
	}
	report.WriteComparisons(h, sw)
	for _, x := range sw[2:] {
		doc.More = append(doc.More, report.Compare(sw[0], x))
	}
	doc.Differs = report.Differences(sw)
	fmt.Fprintln(h)
	report.WritePareto(h, doc.Pareto)
	if err := writeCompareMD(c, h, *md, sw, doc.Pareto); err != nil {
		return c.Exit(ctx, err)
	}
	return c.Exit(ctx, c.WriteJSON(doc))
}

// writeCompareMD writes the comparison's markdown to path (nothing when
// "", stdout without charts for -), saying where on h. A failed write is
// a step failed (exit 3).
func writeCompareMD(c *Command, h io.Writer, path string, sw []report.Sweep, p report.Pareto) error {
	switch path {
	case "":
		return nil
	case "-":
		if _, err := c.Stdout.Write(report.CompareMarkdownText(sw, p)); err != nil {
			return &StepFailedError{Err: fmt.Errorf("-o -: writing stdout: %w", err)}
		}
		return nil
	}
	if err := report.WriteCompareMarkdown(path, sw, p); err != nil {
		return &StepFailedError{Err: err}
	}
	if cdir := report.ChartsPath(path); cdir != "" && len(p.Points) >= 2 {
		fmt.Fprintf(h, "wrote %s (charts in %s)\n", path, cdir)
	} else {
		fmt.Fprintf(h, "wrote %s\n", path)
	}
	return nil
}

// mdOutput checks -o before any file is read: not an input, not --json,
// its charts folder holds no input, and its folder takes a new file; - is
// stdout (not with --json -).
func mdOutput(c *Command, inputs []string, path string) error {
	if path == "-" {
		if c.JSONPath == "-" {
			return BadInput("-o - and --json - both want stdout: give one of them a file")
		}
		return nil
	}
	named := []localfs.Named{{Name: "-o", Path: path, Output: true, Companions: report.ChartsPath(path)}}
	for _, in := range inputs {
		named = append(named, localfs.Named{Name: "an input", Path: in})
		if file, _, ok := strings.Cut(in, "#"); ok {
			named = append(named, localfs.Named{Name: "an input", Path: file})
		}
	}
	if err := c.CheckOverlap(named...); err != nil {
		return err
	}
	if err := localfs.CheckOutput(path, true); err != nil {
		return BadInput("-o %s: %v", path, err)
	}
	return nil
}

// loadSweep reads a sweep from a journal or a sweep document, saying on
// stderr which lines of it were skipped; a missing or wrong file is bad
// input.
func loadSweep(c *Command, path string) (report.Sweep, error) {
	s, err := report.LoadSweep(path)
	if err != nil {
		return s, &BadInputError{Err: err}
	}
	if note := report.SkippedNote(path, s.Skipped, s.SkippedCount); note != "" {
		fmt.Fprintf(c.Stderr, "profdeck %s: %s\n", c.Name, note)
	}
	return s, nil
}

// notAnInput refuses an output path that is one of the input files
// (compare --json A B with the old switch form would write over A); a
// JOURNAL#N names the journal.
func notAnInput(c *Command, inputs []string) error {
	var named []localfs.Named
	for _, in := range inputs {
		named = append(named, localfs.Named{Name: "an input", Path: in})
		if file, _, ok := strings.Cut(in, "#"); ok {
			named = append(named, localfs.Named{Name: "an input", Path: file})
		}
	}
	return c.CheckOverlap(named...)
}

// notAJournal is the one line for a file report cannot read one event of:
// a result document (one JSON object) is named as such; else the first
// line that could not be read.
func notAJournal(path string, rr report.ReadResult) error {
	if st, err := os.Stat(path); err == nil && st.Size() <= report.MaxSweepJSON {
		if b, err := os.ReadFile(path); err == nil && json.Valid(b) && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			return BadInput("%s: a result document, not a journal: report reads a campaign's journal (compare and capacity read sweep documents)", path)
		}
	}
	first := ""
	if len(rr.Skipped) > 0 {
		first = fmt.Sprintf(" (%d line(s) skipped, the first: %s)", rr.SkippedCount, rr.Skipped[0])
	}
	return BadInput("%s: no events could be read%s; not a profdeck journal?", path, first)
}
