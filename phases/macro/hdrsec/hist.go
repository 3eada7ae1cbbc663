// Package hdrsec keeps a load agent's measurements as HDR histograms, one
// per metric per second, compressed for the wire with their counts, and
// merges several agents' histograms into percentiles of all requests.
package hdrsec

import (
	"fmt"
	"sort"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram precision: values are microseconds from 1 µs to one hour,
// kept to three significant digits (relative error at most 0.1%).
const (
	lowestUS  = 1
	highestUS = 3600 * 1_000_000
	sigDigits = 3
)

// Precision is the largest relative error of a histogram's percentile.
const Precision = 0.001

// Second is one agent's measurements of one metric over one second: its
// compressed HDR histogram (base64, as the wire carries it) and its count.
type Second struct {
	Metric string `json:"metric"`
	Unix   int64  `json:"unix"` // the second, on the agent's clock
	Count  int64  `json:"count"`
	HDR    []byte `json:"hdr"`
}

// Recorder keeps one histogram per metric per second on an agent.
type Recorder struct {
	h map[string]map[int64]*hdr.Histogram
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{h: map[string]map[int64]*hdr.Histogram{}} }

// Record adds one value in microseconds to metric's histogram of second unix.
// A value out of range is clamped to the histogram's range.
func (r *Recorder) Record(metric string, unix int64, us int64) { r.RecordN(metric, unix, us, 1) }

// RecordN adds n values of us microseconds, as Record.
func (r *Recorder) RecordN(metric string, unix int64, us, n int64) {
	m := r.h[metric]
	if m == nil {
		m = map[int64]*hdr.Histogram{}
		r.h[metric] = m
	}
	h := m[unix]
	if h == nil {
		h = hdr.New(lowestUS, highestUS, sigDigits)
		m[unix] = h
	}
	_ = h.RecordValues(min(max(us, lowestUS), highestUS), n)
}

// Seconds returns the recorded histograms, compressed, by metric and second.
func (r *Recorder) Seconds() ([]Second, error) {
	var out []Second
	for metric, m := range r.h {
		for unix, h := range m {
			b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
			if err != nil {
				return nil, fmt.Errorf("histogram %s: %w", metric, err)
			}
			out = append(out, Second{Metric: metric, Unix: unix, Count: h.TotalCount(), HDR: b})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Metric != out[j].Metric {
			return out[i].Metric < out[j].Metric
		}
		return out[i].Unix < out[j].Unix
	})
	return out, nil
}

// Merged is the union of several agents' histograms of one metric.
type Merged struct {
	h *hdr.Histogram
}

// NewMerged returns an empty merge.
func NewMerged() *Merged { return &Merged{h: hdr.New(lowestUS, highestUS, sigDigits)} }

// Add merges one compressed second into m; a histogram that does not
// decode, or whose count disagrees with its stated count, is an error.
func (m *Merged) Add(s Second) error {
	h, err := hdr.Decode(s.HDR)
	if err != nil {
		return fmt.Errorf("histogram %s at %d: %w", s.Metric, s.Unix, err)
	}
	if h.TotalCount() != s.Count {
		return fmt.Errorf("histogram %s at %d: %d values, said %d", s.Metric, s.Unix, h.TotalCount(), s.Count)
	}
	m.h.Merge(h)
	return nil
}

// Count is how many values were merged.
func (m *Merged) Count() int64 { return m.h.TotalCount() }

// Quantile returns the q-quantile (0..1) in microseconds.
func (m *Merged) Quantile(q float64) int64 { return m.h.ValueAtQuantile(q * 100) }
