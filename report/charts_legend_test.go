package report

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// TestLoadChartLegendOutsideAndColoursDistinct: eight GPUs are eight
// colours, and the legend is drawn right of every line, never over one.
func TestLoadChartLegendOutsideAndColoursDistinct(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var snaps []snapshot
	for i := range 30 {
		var gs []phases.GPU
		for g := range 8 {
			v := float64(min(i, 25)) * 3000 * (1 + float64(g)/20)
			gs = append(gs, phases.GPU{Index: g, MemoryUsedMiB: &v})
		}
		snaps = append(snaps, snapshot{t0.Add(time.Duration(i) * 20 * time.Second), phases.GPUSample{GPUs: gs}})
	}
	b, err := loadChart(snaps, []stallAt{{t0.Add(9 * time.Minute), phases.Stall{ForS: 60}}}, "svg")
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	lineRe := regexp.MustCompile(`<path d="([^"]+)" style="fill:none;stroke:(#[0-9A-Fa-f]{6})`)
	colours := map[string]bool{}
	maxX := 0.0
	for _, m := range lineRe.FindAllStringSubmatch(svg, -1) {
		pts := strings.Split(strings.TrimPrefix(m[1], "M"), "L")
		if len(pts) < 10 { // the GPUs' lines, not grid, stall or legend marks
			continue
		}
		colours[strings.ToUpper(m[2])] = true
		for _, p := range pts {
			x, _ := strconv.ParseFloat(strings.SplitN(p, ",", 2)[0], 64)
			maxX = max(maxX, x)
		}
	}
	if len(colours) != 8 {
		t.Errorf("%d colours for 8 GPUs: %v", len(colours), colours)
	}
	textRe := regexp.MustCompile(`<text x="([\d.]+)"[^>]*>\s*(GPU \d|stall began)</text>`)
	texts := textRe.FindAllStringSubmatch(svg, -1)
	if len(texts) != 9 {
		t.Fatalf("%d legend entries, want 8 GPUs and the stall", len(texts))
	}
	for _, m := range texts {
		if x, _ := strconv.ParseFloat(m[1], 64); x <= maxX {
			t.Errorf("legend %q at x=%v is over the lines (they reach x=%v)", m[2], x, maxX)
		}
	}
}
