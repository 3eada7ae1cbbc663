package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/localfs"
)

// NotebookEndMarker is the notebook's last line: a file that ends with it
// was written completely.
const NotebookEndMarker = "<!-- end of profdeck notebook -->"

// NotebookOptions shape a rendered notebook.
type NotebookOptions struct {
	// Campaign names the campaign in the title (else the session's).
	Campaign string
	// Now stamps the "written" line (time.Now when nil).
	Now func() time.Time
	// Location is the time zone of the timestamps (time.Local when nil).
	Location *time.Location
	// Journal names the journal the notebook was rendered from.
	Journal string
	// ChartsDir, relative to the notebook, is where the charts are linked
	// from; empty renders no chart links. WriteNotebook fills it in.
	ChartsDir string
	// NoCharts makes WriteNotebook draw no charts.
	NoCharts bool
	// ChartFormat is "svg" (the default) or "png".
	ChartFormat string
	// Secrets are replaced by [redacted] wherever they appear.
	Secrets []string
	// Capacity, when set, is the traffic the campaign plans for: the
	// notebook answers it from the last sweep (a Capacity section).
	Capacity *CapacityAsk
	// GPUHour, when above 0, is a GPU-hour's price in dollars: the
	// variants table gives each variant's cost per million output tokens.
	GPUHour float64
	// Skipped describes the first journal lines that could not be read and
	// SkippedCount counts them all, for the footer.
	Skipped      []string
	SkippedCount int
}

func (o NotebookOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o NotebookOptions) loc() *time.Location {
	if o.Location != nil {
		return o.Location
	}
	return time.Local
}

// RenderNotebook renders the notebook's markdown from journalled events.
func RenderNotebook(events []phases.Event, opts NotebookOptions) ([]byte, error) {
	md, _ := buildNotebook(events, opts)
	return md, nil
}

// WriteNotebook renders the notebook and writes it to path atomically (a
// temporary file renamed over the old one, so a crash leaves the previous
// version), after drawing its charts into "<base>.charts/" beside it.
func WriteNotebook(path string, events []phases.Event, opts NotebookOptions) error {
	if err := localfs.CheckOutput(path, true); err != nil {
		return fmt.Errorf("notebook %s: %w", path, err) // before any chart is drawn
	}
	cdir := ChartsPath(path)
	if cdir == "" {
		opts.NoCharts = true // a device or a FIFO: no folder of charts beside it
	}
	if opts.ChartsDir != "" {
		cdir = filepath.Join(filepath.Dir(path), opts.ChartsDir) // the caller's
	} else if cdir != "" {
		opts.ChartsDir = filepath.Base(cdir) // beside the file itself, a link's target
	}
	if opts.NoCharts {
		opts.ChartsDir = ""
	}
	md, charts := buildNotebook(events, opts)
	var chartErrs []string
	if len(charts) > 0 {
		dir := cdir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("notebook %s: charts: %w", path, err)
		}
		for _, c := range charts {
			b, err := drawSafely(c)
			if err == nil {
				cp := filepath.Join(dir, c.name)
				if old, rerr := os.ReadFile(cp); rerr != nil || !bytes.Equal(old, b) {
					err = localfs.WriteFile(cp, b, 0o644) // unchanged charts are not rewritten
				}
			}
			if err != nil {
				chartErrs = append(chartErrs, fmt.Sprintf("%s: %v", c.name, err))
			}
		}
	}
	if err := localfs.WriteFile(path, md, 0o644); err != nil {
		return fmt.Errorf("notebook %s: %w", path, err)
	}
	if len(chartErrs) > 0 {
		return &ChartsError{Path: path, Failed: chartErrs}
	}
	return nil
}

// ChartsError says the notebook was written but some of its charts were not.
type ChartsError struct {
	Path   string
	Failed []string
}

func (e *ChartsError) Error() string {
	return fmt.Sprintf("notebook %s written, but charts failed: %s", e.Path, strings.Join(e.Failed, "; "))
}

// ChartsPath is the folder where the charts of the document at path go:
// beside the file path names, or beside a symbolic link's target (the
// companions go with the file), named as ChartsDirFor says. It is "" for
// what is not a regular file (a device such as /dev/null, a FIFO): such an
// output gets no charts.
func ChartsPath(path string) string {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return ""
	}
	target, err := localfs.Target(path)
	if err != nil {
		target = path
	}
	return filepath.Join(filepath.Dir(target), ChartsDirFor(target))
}

// ChartsDirFor is the folder, beside the notebook at path, that holds its
// charts: the notebook's name with .charts.
func ChartsDirFor(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base)) + ".charts"
}

// drawSafely draws a chart, turning a panic of the plotting library (on
// figures it cannot scale, say) into an error: a chart never costs the
// notebook.
func drawSafely(c chart) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing failed: %v", r)
		}
	}()
	return c.draw()
}

// chart is one chart file to draw beside the notebook.
type chart struct {
	name string
	draw func() ([]byte, error)
}

// nb is a notebook being built.
type nb struct {
	opts   NotebookOptions
	b      bytes.Buffer
	charts []chart
	bud    BudgetResult // the decode-time budget, quoted by the plateau's verdict
}

func (n *nb) p(format string, a ...any) { fmt.Fprintf(&n.b, format, a...) }
func (n *nb) ln(s string)               { n.b.WriteString(s); n.b.WriteByte('\n') }

func (n *nb) chartExt() string {
	if n.opts.ChartFormat == "png" {
		return "png"
	}
	return "svg"
}

func (n *nb) clock(t time.Time) string { return t.In(n.opts.loc()).Format("15:04:05") }
func (n *nb) stamp(t time.Time) string {
	return t.In(n.opts.loc()).Format("2006-01-02 15:04:05 MST")
}

// addChart registers a chart and returns its markdown link ("" when the
// notebook links no charts).
func (n *nb) addChart(name, alt string, draw func() ([]byte, error)) string {
	if n.opts.ChartsDir == "" {
		return ""
	}
	n.charts = append(n.charts, chart{name: name, draw: draw})
	return fmt.Sprintf("![%s](%s/%s)", alt, filepath.ToSlash(n.opts.ChartsDir), name)
}

func buildNotebook(events []phases.Event, opts NotebookOptions) ([]byte, []chart) {
	events = append([]phases.Event(nil), events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time.Before(events[j].Time) })
	n := &nb{opts: opts}
	all := events
	events = VariantEvents(all)[phases.Baseline] // the baseline's answer reads its own events
	c := classify(events)
	name := n.title(c)
	n.bud = Budget(events)
	n.summary(c, all)
	n.headerTable(c, events, name)
	n.budget(n.bud)
	n.capacity(c)
	n.variants(all)
	n.campaignStepsTable(all) // the variants' loads and steps too
	for _, ph := range phaseOrder {
		runs := c.runs[ph]
		notes := c.notes[ph]
		if len(runs) == 0 && len(notes) == 0 {
			continue
		}
		n.p("## %s\n\n", phaseTitle[ph])
		empty := 0
		if ph == phases.Load {
			runs, empty = realLoads(runs)
		}
		for i, r := range runs {
			n.run(ph, i, len(runs), r)
		}
		if empty > 0 {
			n.p("%d load watch(es) that saw nothing (no server started, no GPU read, no milestone) are left out.\n\n", empty)
		}
		n.notes(notes, "Notes and markers")
	}
	if len(c.notes[""]) > 0 {
		n.ln("## Notes\n")
		n.notes(c.notes[""], "")
	}
	n.sessionLog(c.session)
	n.footer(events)
	out := []byte(remote.MaskURL(n.b.String()))
	if len(opts.Secrets) > 0 {
		out = []byte(scrubText(string(out), opts.Secrets))
	}
	return out, n.charts
}

func (n *nb) footer(events []phases.Event) {
	n.ln("---")
	n.ln("")
	src := ""
	if n.opts.Journal != "" {
		src = " from `" + n.opts.Journal + "`"
	}
	n.p("_Written by profdeck%s (%d events) at %s._\n", src, len(events), n.stamp(n.opts.now()))
	if count := max(n.opts.SkippedCount, len(n.opts.Skipped)); count > 0 {
		n.p("\n_Journal lines skipped (%d):_\n\n", count)
		for _, s := range n.opts.Skipped {
			n.p("- %s\n", s)
		}
		if more := count - len(n.opts.Skipped); more > 0 {
			n.p("- … and %d more\n", more)
		}
	}
	n.ln("")
	n.ln(NotebookEndMarker)
}

// realLoads are the load runs that saw something (a server event, a GPU
// reading, a milestone, a stall or failure), and how many saw nothing: a
// watch started while nothing served and stopped is not a load.
func realLoads(runs []*phaseRun) (real []*phaseRun, empty int) {
	for _, r := range runs {
		if slices.ContainsFunc(r.events, sawLoad) {
			real = append(real, r)
		} else {
			empty++
		}
	}
	return real, empty
}

// sawLoad reports whether ev is something a load shows.
func sawLoad(ev phases.Event) bool {
	switch ev.Data.(type) {
	case phases.Milestone, phases.GPUSample, phases.ServerEvent, phases.LoadFailure, phases.Stall, phases.Diagnosis:
		return true
	}
	return false
}
