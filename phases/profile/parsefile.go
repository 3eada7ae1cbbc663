// Package profile is the profile phase: it captures a torch profile of the
// serving engine (vLLM's /start_profile and /stop_profile around a short
// fixed load), finds the profiler's output on the host and summarises it:
// device time by category (GEMM, attention, MoE, communication, other), the
// top kernels, and the communication share of GPU time and per decode step.
// ParseTable and ParseTrace read key_averages tables and Chrome traces.
package profile

import (
	"io"
	"os"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

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
