package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/localfs"
)

// WriteCompareMarkdown writes the comparison of sweeps to path as
// markdown: what each sweep is, each later sweep's change from the first
// level by level, and the Pareto front of tokens/s per user against
// tokens/s per GPU with its chart, drawn as SVG and PNG into
// "<base>.charts/" beside the file (beside a link's target); what is not a
// regular file (/dev/null) gets no charts.
func WriteCompareMarkdown(path string, sweeps []Sweep, p Pareto) error {
	if err := localfs.CheckOutput(path, true); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	cdir := ChartsPath(path)
	md, charts := compareMarkdown(sweeps, p, filepath.Base(cdir), cdir != "")
	if len(charts) > 0 {
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			return fmt.Errorf("%s: charts: %w", path, err)
		}
		for _, c := range charts {
			img, err := drawSafely(c)
			if err == nil {
				err = localfs.WriteFile(filepath.Join(cdir, c.name), img, 0o644)
			}
			if err != nil {
				return fmt.Errorf("%s: chart %s: %w", path, c.name, err)
			}
		}
	}
	return localfs.WriteFile(path, md, 0o644)
}

// CompareMarkdownText is the comparison's markdown without charts (for
// stdout).
func CompareMarkdownText(sweeps []Sweep, p Pareto) []byte {
	md, _ := compareMarkdown(sweeps, p, "", false)
	return md
}

// compareMarkdown is the comparison's markdown, and its charts to draw into
// dir when withCharts (none otherwise: the markdown then names none).
func compareMarkdown(sweeps []Sweep, p Pareto, dir string, withCharts bool) ([]byte, []chart) {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Comparison of %d sweeps\n\n", len(sweeps))
	w("| sweep | file | source | model | levels | GPUs per replica |\n|---|---|---|---|---:|---:|\n")
	for i, sw := range sweeps {
		gpus := "—"
		if sw.Deployment != nil {
			gpus = fmt.Sprintf("%d (%s)", sw.Deployment.ReplicaGPUs(), parallelText(*sw.Deployment))
		} else if sw.HostGPUs > 0 {
			gpus = fmt.Sprintf("%d (counted on the host)", sw.HostGPUs)
		}
		w("| %s | `%s` | %s | %s | %d | %s |\n", SweepLabel(i), noTicks(sw.Path), mdCell(sw.Source), mdCell(sw.Model), len(sw.Levels), gpus)
	}
	w("\n## Pareto front\n\n")
	w("| sweep | level | tok/s per user | tok/s per GPU | GPUs |\n|---|---|---:|---:|---:|\n")
	for _, f := range p.Front {
		w("| %s | %s | %.1f | %.1f | %d |\n", f.Sweep, f.pointName()[len(f.Sweep)+1:], f.TokSPerUser, f.TokSPerGPU, f.GPUs)
	}
	w("\n%s.\n\n", ParetoDefinitions)
	for _, n := range p.Notes {
		w("- note: %s\n", n)
	}
	var charts []chart
	if withCharts && len(p.Points) >= 2 {
		for _, ext := range []string{"svg", "png"} {
			charts = append(charts, chart{name: "pareto." + ext, draw: func() ([]byte, error) { return ParetoChart(p, ext) }})
		}
		w("![Tokens/s per GPU against tokens/s per user](%s/pareto.svg)\n\n(also as PNG: `%s/pareto.png`)\n\n", filepath.ToSlash(dir), filepath.ToSlash(dir))
	}
	for _, d := range Differences(sweeps) {
		w("- %s\n", d)
	}
	w("\n")
	for i := 1; i < len(sweeps); i++ {
		w("## %s against A\n\n```text\n", SweepLabel(i))
		writeComparisonBody(&b, sweeps[0], sweeps[i], SweepLabel(i))
		w("```\n\n")
	}
	return []byte(remote.MaskURL(b.String())), charts
}
