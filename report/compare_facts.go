package report

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// SweepFacts are what a compared sweep ran against, as far as its file
// recorded it ("" where it did not): compare opens with those that differ.
type SweepFacts struct {
	Workload string // the requests: lengths, dataset, rate
	Launch   string // the server's launch command
	Host     string // the host, or the server URL's host
	Profdeck string // profdeck's version
}

// sweepShape is the part of a sweep's parameters (journalled with its
// start, or in its document) that says its workload.
type sweepShape struct {
	InputLen  int              `json:"input_len"`
	OutputLen int              `json:"output_len"`
	Rate      float64          `json:"rate"`
	DocRate   float64          `json:"request_rate"`
	Workload  *json.RawMessage `json:"workload"`
}

// text is the workload in words, e.g. "input 256, output 256 tokens, random".
func (s sweepShape) text() string {
	if s.InputLen == 0 && s.OutputLen == 0 {
		return ""
	}
	t := fmt.Sprintf("input %d, output %d tokens", s.InputLen, s.OutputLen)
	var w struct {
		Dataset    string  `json:"dataset"`
		File       string  `json:"file"`
		RangeRatio float64 `json:"range_ratio"`
		PrefixLen  int     `json:"prefix_len"`
	}
	if s.Workload != nil && json.Unmarshal(*s.Workload, &w) == nil {
		switch {
		case w.File != "":
			t = fmt.Sprintf("%s %s, output %d tokens", w.Dataset, w.File, s.OutputLen)
		case w.RangeRatio > 0:
			t += fmt.Sprintf(" ±%g%%", 100*w.RangeRatio)
		}
		if w.PrefixLen > 0 {
			t += fmt.Sprintf(", %d-token shared prefix", w.PrefixLen)
		}
	}
	if r := max(s.Rate, s.DocRate); r > 0 {
		t += fmt.Sprintf(", open loop at %g req/s", r)
	}
	return t
}

// shapeOf reads the workload from raw parameters or a document.
func shapeOf(raw []byte) string {
	var s sweepShape
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s.text()
}

// urlHost is a URL's host ("" when it has none).
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// journalFacts fills in what a journal recorded of the sweep's server and
// session: the launch command, the host and profdeck's version.
func (sw *Sweep) journalFacts(c *classified) {
	if c.system != nil {
		sw.Facts.Launch, sw.Facts.Host = c.system.LaunchCommand, c.system.Host
	}
	if n := len(c.sessions); n > 0 {
		sw.Facts.Profdeck = c.sessions[n-1].Version
		if sw.Facts.Host == "" {
			sw.Facts.Host = c.sessions[n-1].Host
		}
	}
}

// factRows are the facts compare weighs, by name.
func factRows(sw Sweep) [][2]string {
	tp := ""
	if d := sw.Deployment; d != nil && d.TP > 0 {
		tp = parallelText(*d)
	}
	return [][2]string{{"workload", sw.Facts.Workload}, {"launch", sw.Facts.Launch}, {"model", sw.Model},
		{"TP", tp}, {"host", sw.Facts.Host}, {"profdeck", sw.Facts.Profdeck}}
}

// Differences are the lines saying what differs between the sweeps (one
// per fact that is not the same in all: each sweep's value by its label),
// or one line saying that none of those recorded differs.
func Differences(sweeps []Sweep) []string {
	var out, same []string
	for k := range factRows(Sweep{}) {
		name := factRows(Sweep{})[k][0]
		vals := make([]string, len(sweeps))
		differ := false
		for i, sw := range sweeps {
			vals[i] = factRows(sw)[k][1]
			differ = differ || vals[i] != vals[0]
		}
		if !differ {
			if vals[0] != "" {
				same = append(same, name)
			}
			continue
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == "" {
				v = "not recorded"
			}
			parts[i] = SweepLabel(i) + " " + v
		}
		out = append(out, fmt.Sprintf("differs: %s: %s", name, strings.Join(parts, "; ")))
	}
	if len(out) == 0 {
		if len(same) == 0 {
			return []string{"differs: nothing the files recorded (no workload, launch, model, TP, host or profdeck version in them)"}
		}
		return []string{"differs: nothing recorded: the same " + strings.Join(same, ", ")}
	}
	return out
}

// WriteComparisons prints the sweeps labelled A, B, C…, what differs
// between them, then each later sweep's change relative to A.
func WriteComparisons(w io.Writer, sweeps []Sweep) {
	for i, sw := range sweeps {
		fmt.Fprintf(w, "%s: %s (%s, %d levels)\n", SweepLabel(i), sw.Path, sw.Source, len(sw.Levels))
	}
	for _, d := range Differences(sweeps) {
		fmt.Fprintln(w, d)
	}
	for i := 1; i < len(sweeps); i++ {
		fmt.Fprintf(w, "\n%s against A\n\n", SweepLabel(i))
		writeComparisonBody(w, sweeps[0], sweeps[i], SweepLabel(i))
	}
}
