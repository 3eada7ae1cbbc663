package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote/localfs"
)

// Sweep is one concurrency sweep's levels, read from a journal or from a
// `sweep --json` result document.
type Sweep struct {
	Path    string
	Source  string // "sweep JSON" or "journal, sweep 2 of 2 (started …)"
	Model   string
	Levels  []phases.LevelResult
	Plateau *phases.Plateau
	// Deployment is what served the sweep, as it recorded (nil: not
	// recorded); SLO and SLOShare its SLO ("" when none; the share 0 when
	// not recorded); HostGPUs the GPUs its sampler counted (0: none).
	Deployment *phases.Deployment
	SLO        string
	SLOShare   float64
	HostGPUs   int
	// Search is the sweep's SLO search, when it ran one (its last state).
	Search *phases.Search
	// Skipped describes the first journal lines that could not be read;
	// SkippedCount counts them all.
	Skipped      []string
	SkippedCount int
	// Facts are what it ran against, as far as recorded.
	Facts SweepFacts
	// Trace is the trace window the sweep replayed (nil: none).
	Trace *macro.TraceSummary
}

// sweepJSON is the part of the `sweep --json` document compare reads.
type sweepJSON struct {
	URL     string               `json:"url"`
	Model   string               `json:"model"`
	Started string               `json:"started"`
	Levels  []phases.LevelResult `json:"levels"`
	Plateau *phases.Plateau      `json:"plateau"`
	// What a capacity plan reads besides the levels.
	Deployment *phases.Deployment `json:"deployment"`
	SLO        *struct {
		Spec  string  `json:"spec"`
		Share float64 `json:"required_share"`
	} `json:"slo"`
	GPU *struct {
		GPUs int `json:"gpus"`
	} `json:"gpu"`
	Search *phases.Search `json:"search"`
}

// MaxSweepJSON is the largest file read as a `sweep --json` document; a
// larger file is read as a journal, line by line (lines are bounded).
const MaxSweepJSON = 32 << 20

// MaxSweepLevels is the most levels read from a sweep document or kept from
// a journal: a sweep of 1…256 has 9, a campaign a few dozen; past this a
// file is refused rather than read into unbounded memory.
const MaxSweepLevels = 10_000

// LoadSweep reads a sweep from path: a `sweep --json` document, or a
// journal (its last sweep that finished at least one level). "PATH#N"
// picks the journal's Nth sweep (1 is the first, -1 the last), e.g. to
// compare the sweeps before and after a server restart in one campaign.
//
// "JOURNAL#NAME" picks the last sweep of the campaign's variant NAME
// (baseline: the campaign's own launch).
func LoadSweep(path string) (Sweep, error) {
	if file, name, ok := variantRef(path); ok {
		return loadVariantSweep(path, file, name)
	}
	file, which, err := sweepRef(path)
	if err != nil {
		return Sweep{}, err
	}
	sw, err := loadSweepFile(file, which)
	if which != 0 {
		sw.Path = path
	}
	return sw, err
}

// sweepRef splits "PATH#N" when PATH is not itself a file name; the
// errors name what is missing: the file, or the journal before "#N".
func sweepRef(path string) (string, int, error) {
	_, err := os.Stat(path)
	if err == nil {
		return path, 0, nil
	}
	i := strings.LastIndexByte(path, '#')
	n, perr := strconv.Atoi(path[i+1:])
	if i <= 0 || perr != nil {
		return "", 0, fmt.Errorf("%s: %w", path, localfs.UnwrapPath(err))
	}
	file := path[:i]
	if _, serr := os.Stat(file); serr != nil {
		return "", 0, fmt.Errorf("%s: the journal %s: %w", path, file, localfs.UnwrapPath(serr))
	}
	if n == 0 {
		return "", 0, fmt.Errorf("%s: sweeps are numbered from 1 (#-1 is the last)", path)
	}
	return file, n, nil
}

func loadSweepFile(path string, which int) (Sweep, error) {
	f, err := localfs.OpenInput(path) // a FIFO or /dev/zero would never end
	if err != nil {
		return Sweep{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Sweep{}, err
	}
	if st.Size() <= MaxSweepJSON {
		sw, isDoc, err := readSweepDoc(path, f, which)
		if isDoc {
			return sw, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return Sweep{}, err
		}
	}
	return readSweepJournal(path, f, which)
}

// ParseSweep reads a sweep from the bytes of a sweep JSON document or a
// journal; path names it in messages. which picks a journal's sweep: 0 the
// last with results, N > 0 the Nth, N < 0 the Nth from the end.
func ParseSweep(path string, b []byte, which int) (Sweep, error) {
	sw, isDoc, err := readSweepDoc(path, bytes.NewReader(b), which)
	if isDoc {
		return sw, err
	}
	return readSweepJournal(path, bytes.NewReader(b), which)
}

// readSweepJournal reads a journal's macro events (and what says which
// sweep is which), at most MaxSweepLevels levels, and picks sweep which.
func readSweepJournal(path string, r io.Reader, which int) (Sweep, error) {
	levels, read := 0, 0
	var over bool
	keep := func(phase, kind string) bool {
		read++
		if phase == phases.Macro && kind == phases.KindMacroLevel {
			levels++
			over = over || levels > MaxSweepLevels
			return !over
		}
		return phase == phases.Macro || phase == phases.Session
	}
	rr, err := readJournal(r, keep)
	if err != nil {
		return Sweep{}, fmt.Errorf("%s: %w", path, err)
	}
	if over {
		return Sweep{}, fmt.Errorf("%s: more than %d sweep levels: not read", path, MaxSweepLevels)
	}
	return sweepFromJournal(path, rr, which, read)
}

// readSweepDoc reads a `sweep --json` document from r as it goes (levels
// one by one, at most MaxSweepLevels). isDoc is false when r's first JSON
// object has no "levels" (a journal, or not JSON): nothing is returned
// then, and the caller reads it as a journal.
func readSweepDoc(path string, r io.Reader, which int) (sw Sweep, isDoc bool, err error) {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Sweep{}, false, nil
	}
	var doc sweepJSON
	var facts SweepFacts
	shape := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Sweep{}, isDoc, sweepDocErr(path, isDoc, err)
		}
		key, _ := tok.(string)
		switch key {
		case "levels":
			isDoc = true
			if which != 0 {
				return Sweep{}, true, fmt.Errorf("%s: a sweep JSON document holds one sweep; #%d picks sweeps of a journal", path, which)
			}
			if doc.Levels, err = decodeLevels(dec); err != nil {
				return Sweep{}, true, fmt.Errorf("%s: sweep JSON: %w", path, err)
			}
		case "url":
			err = dec.Decode(&doc.URL)
		case "model":
			err = dec.Decode(&doc.Model)
		case "started":
			err = dec.Decode(&doc.Started)
		case "plateau":
			err = dec.Decode(&doc.Plateau)
		case "deployment":
			err = dec.Decode(&doc.Deployment)
		case "slo":
			err = dec.Decode(&doc.SLO)
		case "gpu":
			err = dec.Decode(&doc.GPU)
		case "search":
			err = dec.Decode(&doc.Search)
		case "input_len", "output_len", "request_rate", "workload":
			var raw json.RawMessage
			if err = dec.Decode(&raw); err == nil {
				shape[key] = raw
			}
		case "profdeck_version":
			err = dec.Decode(&facts.Profdeck)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return Sweep{}, isDoc, sweepDocErr(path, isDoc, err)
		}
	}
	if !isDoc {
		return Sweep{}, false, nil
	}
	if len(doc.Levels) == 0 {
		return Sweep{}, true, fmt.Errorf("%s: sweep JSON has no levels", path)
	}
	src := "sweep JSON"
	if doc.Started != "" {
		src += ", started " + doc.Started
	}
	sw = Sweep{Path: path, Source: src, Model: doc.Model, Levels: doc.Levels, Plateau: doc.Plateau, Deployment: doc.Deployment,
		Search: doc.Search, Facts: facts}
	if b, err := json.Marshal(shape); err == nil {
		sw.Facts.Workload = shapeOf(b)
		sw.Trace = replayed(b)
	}
	sw.Facts.Host = urlHost(doc.URL)
	if doc.SLO != nil {
		sw.SLO, sw.SLOShare = doc.SLO.Spec, doc.SLO.Share
	}
	if doc.GPU != nil {
		sw.HostGPUs = doc.GPU.GPUs
	}
	return sw, true, nil
}

// sweepDocErr is a decoding error once the document is known to be a sweep
// document; before, the file may still be a journal (nil: read it so).
func sweepDocErr(path string, isDoc bool, err error) error {
	if !isDoc {
		return nil
	}
	return fmt.Errorf("%s: sweep JSON: %w", path, err)
}

// decodeLevels reads the "levels" array one level at a time.
func decodeLevels(dec *json.Decoder) ([]phases.LevelResult, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("\"levels\" is not a list")
	}
	var out []phases.LevelResult
	for dec.More() {
		if len(out) == MaxSweepLevels {
			return nil, fmt.Errorf("more than %d levels: not read", MaxSweepLevels)
		}
		var l phases.LevelResult
		if err := dec.Decode(&l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	_, err = dec.Token() // ]
	return out, err
}

// sweepFromJournal picks the sweep which (as ParseSweep) from a journal.
// read counts the events in the journal, kept or not.
func sweepFromJournal(path string, rr ReadResult, which, read int) (Sweep, error) {
	if read == 0 {
		return Sweep{}, fmt.Errorf("%s: neither a sweep JSON document (no \"levels\") nor a journal (no event could be read; %d lines skipped)", path, rr.SkippedCount)
	}
	c := classify(rr.Events)
	runs := c.runs[phases.Macro]
	sweepOf := func(i int) Sweep {
		sw := journalSweep(path, c, i)
		sw.Skipped, sw.SkippedCount = rr.Skipped, rr.SkippedCount
		return sw
	}
	if which != 0 {
		i := which - 1
		if which < 0 {
			i = len(runs) + which
		}
		if i < 0 || i >= len(runs) {
			return Sweep{}, fmt.Errorf("%s: no sweep #%d: the journal holds %d sweep(s)", path, which, len(runs))
		}
		sw := sweepOf(i)
		if len(sw.Levels) == 0 {
			return Sweep{}, fmt.Errorf("%s: sweep #%d finished no level", path, which)
		}
		return sw, nil
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if sw := sweepOf(i); len(sw.Levels) > 0 {
			return sw, nil
		}
	}
	return Sweep{}, fmt.Errorf("%s: the journal holds no finished sweep level (%d events)", path, read)
}

// journalSweep is the i-th sweep of a classified journal read from path.
func journalSweep(path string, c *classified, i int) Sweep {
	runs := c.runs[phases.Macro]
	sw := Sweep{Path: path}
	sw.setParams(runs[i].params)
	m := macroOf(runs[i].events)
	sw.Levels, sw.Plateau, sw.Search = m.levels, m.plateau, m.search
	if k := len(m.gpuSrc); k > 0 {
		sw.HostGPUs = m.gpuSrc[k-1].GPUs
	}
	sw.Source = fmt.Sprintf("journal, sweep %d of %d (started %s)", i+1, len(runs), runs[i].start.UTC().Format("2006-01-02 15:04:05 UTC"))
	sw.journalFacts(c)
	if c.system != nil {
		sw.Model = c.system.Model
		if sw.HostGPUs == 0 {
			sw.HostGPUs = c.system.GPUCount
		}
	}
	return sw
}

// setParams reads what the sweep's start journalled: its deployment and
// its SLO.
func (sw *Sweep) setParams(params any) {
	if params == nil {
		return
	}
	b, err := json.Marshal(params)
	if err != nil {
		return
	}
	var p struct {
		Deployment *phases.Deployment `json:"deployment"`
		SLO        string             `json:"slo"`
		Share      float64            `json:"slo_share"`
	}
	if json.Unmarshal(b, &p) == nil {
		sw.Deployment, sw.SLO, sw.SLOShare = p.Deployment, p.SLO, p.Share
	}
	sw.Facts.Workload = shapeOf(b)
	sw.Trace = replayed(b)
}

// replayed is the trace window a sweep's workload record (in its
// document, or its start's parameters) says it replayed (nil: none).
func replayed(b []byte) *macro.TraceSummary {
	var w struct {
		Workload struct {
			Trace *macro.TraceSummary `json:"trace"`
		} `json:"workload"`
	}
	if json.Unmarshal(b, &w) != nil {
		return nil
	}
	return w.Workload.Trace
}

// metric is one compared figure of a level.
type metric struct {
	name, unit string
	get        func(l phases.LevelResult) float64
	prec       int
}

var compareMetrics = []metric{
	{"output tok/s", "tok/s", func(l phases.LevelResult) float64 { return l.OutputThroughput }, 1},
	{"requests/s", "req/s", func(l phases.LevelResult) float64 { return l.RequestThroughput }, 2},
	{"TTFT p50", "ms", func(l phases.LevelResult) float64 { return l.MedianTTFTms }, 2},
	{"TTFT p99", "ms", func(l phases.LevelResult) float64 { return l.P99TTFTms }, 2},
	{"TPOT p50", "ms", func(l phases.LevelResult) float64 { return l.MedianTPOTms }, 2},
	{"TPOT p99", "ms", func(l phases.LevelResult) float64 { return l.P99TPOTms }, 2},
	{"ITL p50", "ms", func(l phases.LevelResult) float64 { return l.MedianITLms }, 2},
	{"E2EL p50", "ms", func(l phases.LevelResult) float64 { return l.MedianE2ELms }, 1},
	{"failed", "", func(l phases.LevelResult) float64 { return float64(l.Failed) }, 0},
	{"spec accept", "%", func(l phases.LevelResult) float64 {
		if l.Server == nil || l.Server.SpecAcceptRate == nil {
			return math.NaN()
		}
		return 100 * *l.Server.SpecAcceptRate
	}, 1},
}

// levelKey matches levels across sweeps: concurrency, rate when set, and
// the level's run when a sweep ran it more than once (0 the first), so
// the first run of a level in A is compared with the first in B.
type levelKey struct {
	c    int
	rate float64
	run  int
}

func (k levelKey) String() string {
	s := fmt.Sprintf("C=%d", k.c)
	if k.rate > 0 {
		s = fmt.Sprintf("C=%d @%.3g req/s", k.c, k.rate)
	}
	if k.run > 0 {
		s += fmt.Sprintf(" (run %d)", k.run+1)
	}
	return s
}

// levelKeys are the keys of a sweep's levels, in order: a level run again
// gets the next run number.
func levelKeys(ls []phases.LevelResult) []levelKey {
	runs := map[levelKey]int{}
	out := make([]levelKey, len(ls))
	for i, l := range ls {
		k := levelKey{c: l.Concurrency, rate: l.Rate}
		k.run = runs[k]
		runs[k]++
		out[i] = k
	}
	return out
}

// DeltaPct is the change from a to b in percent of a; ok is false when a
// is zero (no percentage can be given).
func DeltaPct(a, b float64) (pct float64, ok bool) {
	if a == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return 0, false
	}
	return 100 * (b - a) / math.Abs(a), true
}

// Delta is one metric of one level in A and B.
type Delta struct {
	Metric string   `json:"metric"`
	Unit   string   `json:"unit,omitempty"`
	A      *float64 `json:"a"` // nil when not measured
	B      *float64 `json:"b"`
	// ChangePct is (B − A) / |A| in percent; nil when A is zero or missing.
	ChangePct *float64 `json:"change_pct"`
}

// LevelDelta is one level's metrics compared; OnlyIn is "A" or "B" when
// the level ran in one sweep only.
type LevelDelta struct {
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"request_rate,omitempty"`
	// Run numbers a level its sweep ran more than once (2 the second run;
	// 0 for the first), paired with the same run in the other sweep.
	Run    int    `json:"run,omitempty"`
	OnlyIn string `json:"only_in,omitempty"`
	// Steered names the sides ("A", "B", "A and B") where the level was
	// changed by hand while it ran: its figures are not of its plan.
	Steered string  `json:"steered,omitempty"`
	Metrics []Delta `json:"metrics,omitempty"`
}

// SweepInfo says what one side of a comparison is.
type SweepInfo struct {
	Path    string          `json:"path"`
	Source  string          `json:"source"`
	Model   string          `json:"model,omitempty"`
	Levels  int             `json:"levels"`
	Plateau *phases.Plateau `json:"plateau"`
}

// Comparison is B compared with A, level by level.
type Comparison struct {
	A      SweepInfo    `json:"a"`
	B      SweepInfo    `json:"b"`
	Levels []LevelDelta `json:"by_level"`
	// PlateauChangePct compares the plateaus' throughput (nil without both).
	PlateauChangePct *float64 `json:"plateau_change_pct"`
}

func num(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// Compare builds the comparison of B with A.
func Compare(a, b Sweep) Comparison {
	var c Comparison
	c.A.Path, c.A.Source, c.A.Model, c.A.Levels, c.A.Plateau = a.Path, a.Source, a.Model, len(a.Levels), a.Plateau
	c.B.Path, c.B.Source, c.B.Model, c.B.Levels, c.B.Plateau = b.Path, b.Source, b.Model, len(b.Levels), b.Plateau
	am, bm := levelMap(a.Levels), levelMap(b.Levels)
	keys := make([]levelKey, 0, len(am)+len(bm))
	seen := map[levelKey]bool{}
	for _, k := range append(levelKeys(a.Levels), levelKeys(b.Levels)...) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].c != keys[j].c {
			return keys[i].c < keys[j].c
		}
		if keys[i].rate != keys[j].rate {
			return keys[i].rate < keys[j].rate
		}
		return keys[i].run < keys[j].run
	})
	for _, k := range keys {
		ld := LevelDelta{Concurrency: k.c, Rate: k.rate}
		if k.run > 0 {
			ld.Run = k.run + 1
		}
		la, okA := am[k]
		lb, okB := bm[k]
		ld.Steered = steeredSides(okA && len(la.Steered) > 0, okB && len(lb.Steered) > 0)
		switch {
		case !okA:
			ld.OnlyIn = "B"
		case !okB:
			ld.OnlyIn = "A"
		default:
			for _, m := range compareMetrics {
				va, vb := m.get(la), m.get(lb)
				if m.name == "failed" && va == 0 && vb == 0 || math.IsNaN(va) && math.IsNaN(vb) {
					continue
				}
				d := Delta{Metric: m.name, Unit: m.unit, A: num(va), B: num(vb)}
				if p, ok := DeltaPct(va, vb); ok {
					d.ChangePct = &p
				}
				ld.Metrics = append(ld.Metrics, d)
			}
		}
		c.Levels = append(c.Levels, ld)
	}
	if a.Plateau != nil && b.Plateau != nil {
		if p, ok := DeltaPct(a.Plateau.OutputThroughput, b.Plateau.OutputThroughput); ok {
			c.PlateauChangePct = &p
		}
	}
	return c
}

func precOf(metric string) int {
	for _, m := range compareMetrics {
		if m.name == metric {
			return m.prec
		}
	}
	return 2
}

func fmtPtr(v *float64, prec int) string {
	if v == nil {
		return "—"
	}
	return fmtVal(*v, prec)
}

// WriteComparison prints B's per-level, per-metric change relative to A.
func WriteComparison(w io.Writer, a, b Sweep) {
	fmt.Fprintf(w, "A: %s (%s, %d levels)\n", a.Path, a.Source, len(a.Levels))
	fmt.Fprintf(w, "B: %s (%s, %d levels)\n", b.Path, b.Source, len(b.Levels))
	for _, d := range Differences([]Sweep{a, b}) {
		fmt.Fprintln(w, d)
	}
	fmt.Fprintln(w)
	writeComparisonBody(w, a, b, "B")
}

// writeComparisonBody is the per-level table of b (labelled label)
// against a, and the plateaus.
func writeComparisonBody(w io.Writer, a, b Sweep, label string) {
	c := Compare(a, b)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "level\tmetric\tA\t\t%s\tunit\tchange\t\n", label)
	steered := 0
	for _, ld := range c.Levels {
		k := levelKey{c: ld.Concurrency, rate: ld.Rate, run: max(ld.Run-1, 0)}
		name := k.String()
		if ld.Steered != "" {
			name += " (steered in " + strings.Replace(ld.Steered, "B", label, 1) + ")"
			steered++
		}
		if ld.OnlyIn != "" {
			fmt.Fprintf(tw, "%s\t(only in %s)\t\t\t\t\t\t\n", name, strings.Replace(ld.OnlyIn, "B", label, 1))
			continue
		}
		for i, d := range ld.Metrics {
			lvl := ""
			if i == 0 {
				lvl = name
			}
			ch := "n/a"
			if d.ChangePct != nil {
				ch = fmt.Sprintf("%+.1f%%", *d.ChangePct)
			} else if d.A != nil && d.B != nil && *d.A == *d.B {
				ch = "0.0%"
			}
			p := precOf(d.Metric)
			fmt.Fprintf(tw, "%s\t%s\t%s\t→\t%s\t%s\t%s\t\n", lvl, d.Metric, fmtPtr(d.A, p), fmtPtr(d.B, p), d.Unit, ch)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "plateau: %s → %s\n", plateauText(a.Plateau), plateauText(b.Plateau))
	if c.PlateauChangePct != nil {
		fmt.Fprintf(w, "plateau throughput change: %+.1f%%\n", *c.PlateauChangePct)
	}
	fmt.Fprintf(w, "change = (%s − A) / A; for times lower is better, for tok/s, req/s and spec accept higher is better.\n", label)
	if steered > 0 {
		fmt.Fprintf(w, "steered: %d level(s) had their concurrency changed or were paused by hand while they ran; their change is not the change of the level as planned.\n", steered)
	}
}

func levelMap(ls []phases.LevelResult) map[levelKey]phases.LevelResult {
	m := map[levelKey]phases.LevelResult{}
	for i, k := range levelKeys(ls) {
		m[k] = ls[i]
	}
	return m
}

func plateauText(p *phases.Plateau) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%.0f tok/s from C=%d", p.OutputThroughput, p.Concurrency)
}

// SkippedNote summarises unread journal lines for stderr.
func SkippedNote(path string, skipped []string, count int) string {
	if count == 0 {
		return ""
	}
	head := fmt.Sprintf("%s: %d line(s) skipped", path, count)
	if count > len(skipped) {
		head += fmt.Sprintf("; the first %d", len(skipped))
	}
	return head + ":\n  " + strings.Join(skipped, "\n  ")
}

func fmtVal(v float64, prec int) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// steeredSides names the sides whose level was steered by hand.
func steeredSides(a, b bool) string {
	switch {
	case a && b:
		return "A and B"
	case a:
		return "A"
	case b:
		return "B"
	}
	return ""
}
