package macro

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote/localfs"
)

// PeakWindow is the span over which a trace's peak rate is taken.
const PeakWindow = time.Minute

// PeakRate is the most requests per second a trace (sorted by arrival)
// asks over any PeakWindow, or its mean rate when it spans less (0 with
// fewer than two requests).
func PeakRate(reqs []TraceRequest) float64 {
	if len(reqs) < 2 {
		return 0
	}
	span := reqs[len(reqs)-1].At - reqs[0].At
	if span <= 0 {
		return 0
	}
	if span <= PeakWindow {
		return float64(len(reqs)-1) / span.Seconds()
	}
	most := 0
	for i, j := 0, 0; i < len(reqs); i++ {
		for j < len(reqs) && reqs[j].At < reqs[i].At+PeakWindow {
			j++
		}
		most = max(most, j-i)
	}
	return float64(most) / PeakWindow.Seconds()
}

// DetectTraceFormat names a trace file's format: burstgpt for a .csv,
// bailian for JSONL whose first line has a chat_id, else mooncake.
func DetectTraceFormat(path string) string {
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return TraceBurstGPT
	}
	f, err := localfs.OpenInput(path)
	if err != nil {
		return TraceMooncake // ReadTrace says why the file cannot be read
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxDatasetLine)
	if sc.Scan() && bytes.Contains(sc.Bytes(), []byte(`"chat_id"`)) {
		return TraceBailian
	}
	return TraceMooncake
}
