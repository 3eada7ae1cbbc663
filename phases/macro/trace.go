package macro

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote/localfs"
)

// This file reads production traces: Mooncake's JSONL, Alibaba Bailian's
// JSONL and BurstGPT's CSV, each request an arrival time, its input and
// output lengths and (Mooncake, Bailian) the hashes of its prompt's blocks.

// Trace formats (--dataset mooncake FILE and so on).
const (
	TraceMooncake = "mooncake"
	TraceBailian  = "bailian"
	TraceBurstGPT = "burstgpt"
)

// Block sizes, in tokens, of the formats' hash ids.
const (
	MooncakeBlock = 512
	BailianBlock  = 16
)

// Bounds on what a trace may hold.
const (
	maxTraceRequests = 1_000_000
	maxTraceHashIDs  = 1 << 16 // one request's blocks
	maxTraceTokens   = 1 << 21 // one request's input or output
	maxTraceIDsTotal = 16 << 20
	maxTraceTime     = 366 * 24 * time.Hour
)

// TraceRequest is one request of a trace: when it arrives (from the
// trace's first request), its lengths and its blocks' hash ids.
type TraceRequest struct {
	At        time.Duration
	InputLen  int
	OutputLen int
	HashIDs   []int64
}

// Trace is a trace's requests in arrival order.
type Trace struct {
	Format    string
	File      string
	BlockSize int // tokens per hash id (0: the trace has none)
	Requests  []TraceRequest
}

// IsTraceFormat says whether a --dataset kind is a trace format.
func IsTraceFormat(kind string) bool {
	return kind == TraceMooncake || kind == TraceBailian || kind == TraceBurstGPT
}

// ReadTrace reads a trace file of a format; errors name the file and line.
func ReadTrace(format, path string) (*Trace, error) {
	if !IsTraceFormat(format) {
		return nil, fmt.Errorf("--dataset %q: want mooncake, bailian or burstgpt", format)
	}
	f, err := localfs.OpenInput(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	defer f.Close()
	return ParseTrace(format, path, f)
}

// ParseTrace reads a trace of a format from r; name is the file's name in
// errors. The requests are sorted by arrival and start at 0.
func ParseTrace(format, name string, r io.Reader) (*Trace, error) {
	t := &Trace{Format: format, File: name}
	var err error
	switch format {
	case TraceMooncake:
		t.BlockSize = MooncakeBlock
		err = t.readJSONL(r, time.Millisecond)
	case TraceBailian:
		t.BlockSize = BailianBlock
		err = t.readJSONL(r, time.Second)
	case TraceBurstGPT:
		err = t.readBurstGPT(r)
	default:
		return nil, fmt.Errorf("--dataset %q: want mooncake, bailian or burstgpt", format)
	}
	if err != nil {
		return nil, err
	}
	if len(t.Requests) == 0 {
		return nil, fmt.Errorf("%s: no requests in the trace", name)
	}
	t.normalize()
	return t, nil
}

// normalize sorts the requests by arrival and moves the first to 0.
func (t *Trace) normalize() {
	sort.SliceStable(t.Requests, func(i, j int) bool { return t.Requests[i].At < t.Requests[j].At })
	first := t.Requests[0].At
	for i := range t.Requests {
		t.Requests[i].At -= first
	}
}

// traceLine is one JSONL line of Mooncake (timestamp in ms) or Bailian
// (timestamp in s; chat ids and turn are not read).
type traceLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *float64 `json:"input_length"`
	OutputLength *float64 `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
}

func (t *Trace) readJSONL(r io.Reader, unit time.Duration) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxDatasetLine)
	ids := 0
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		req, err := parseTraceLine(line, unit, t.BlockSize)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", t.File, n, err)
		}
		if ids += len(req.HashIDs); ids > maxTraceIDsTotal || len(t.Requests) >= maxTraceRequests {
			return fmt.Errorf("%s:%d: the trace is past %d requests or %d hash ids; cut it", t.File, n, maxTraceRequests, maxTraceIDsTotal)
		}
		t.Requests = append(t.Requests, req)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s: a line is past %d bytes", t.File, maxDatasetLine)
		}
		return fmt.Errorf("%s: %v", t.File, err)
	}
	return nil
}

func parseTraceLine(line []byte, unit time.Duration, block int) (TraceRequest, error) {
	var l traceLine
	if err := json.Unmarshal(line, &l); err != nil {
		return TraceRequest{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if l.Timestamp == nil || l.InputLength == nil {
		return TraceRequest{}, errors.New("timestamp and input_length are required")
	}
	at, err := traceTime(*l.Timestamp, unit)
	if err != nil {
		return TraceRequest{}, err
	}
	req := TraceRequest{At: at, OutputLen: 1}
	if req.InputLen, err = traceTokens("input_length", *l.InputLength, 1); err != nil {
		return TraceRequest{}, err
	}
	if l.OutputLength != nil {
		if req.OutputLen, err = traceTokens("output_length", *l.OutputLength, 1); err != nil {
			return TraceRequest{}, err
		}
	}
	if len(l.HashIDs) > maxTraceHashIDs || len(l.HashIDs) > (req.InputLen+block-1)/block {
		return TraceRequest{}, fmt.Errorf("%d hash_ids for an input of %d tokens in blocks of %d", len(l.HashIDs), req.InputLen, block)
	}
	req.HashIDs = l.HashIDs
	return req, nil
}

// traceTime is a timestamp in unit as a duration, refused when negative,
// not a number or past a year.
func traceTime(v float64, unit time.Duration) (time.Duration, error) {
	if math.IsNaN(v) || v < 0 || v*float64(unit) > float64(maxTraceTime) {
		return 0, fmt.Errorf("timestamp %g: want a time from 0 to a year", v)
	}
	return time.Duration(v * float64(unit)), nil
}

// traceTokens is a token count of at least lo, refused past the bound or
// when not a whole number.
func traceTokens(field string, v float64, lo int) (int, error) {
	if math.IsNaN(v) || v != math.Trunc(v) || v < float64(lo) || v > maxTraceTokens {
		return 0, fmt.Errorf("%s %g: want a whole number from %d to %d", field, v, lo, maxTraceTokens)
	}
	return int(v), nil
}

// BurstGPT's columns (seconds from the trace's start; tokens).
const (
	burstTimestamp = "Timestamp"
	burstRequest   = "Request tokens"
	burstResponse  = "Response tokens"
)

func (t *Trace) readBurstGPT(r io.Reader) error {
	cr := csv.NewReader(&lineCap{r: bufio.NewReader(r)})
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s:1: no CSV header: %v", t.File, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range []string{burstTimestamp, burstRequest, burstResponse} {
		if _, ok := col[c]; !ok {
			return fmt.Errorf("%s:1: no %q column (want Timestamp, Request tokens, Response tokens)", t.File, c)
		}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s:%d: %v", t.File, pe.Line, pe.Err)
			}
			return fmt.Errorf("%s: %v", t.File, err)
		}
		line, _ := cr.FieldPos(0)
		req, failed, err := burstRow(rec, col)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", t.File, line, err)
		}
		if failed {
			continue
		}
		if len(t.Requests) >= maxTraceRequests {
			return fmt.Errorf("%s:%d: the trace is past %d requests; cut it", t.File, line, maxTraceRequests)
		}
		t.Requests = append(t.Requests, req)
	}
}

// burstRow reads one BurstGPT row; failed is true for a failed request
// (no response tokens, as the dataset's README says of its failures, or
// no request tokens), which the replay leaves out as the dataset's
// "without fails" files do.
func burstRow(rec []string, col map[string]int) (req TraceRequest, failed bool, err error) {
	get := func(c string) (float64, error) {
		i := col[c]
		if i >= len(rec) {
			return 0, fmt.Errorf("no %q field", c)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
		if err != nil {
			return 0, fmt.Errorf("%s %q: not a number", c, rec[i])
		}
		return v, nil
	}
	ts, err := get(burstTimestamp)
	if err == nil {
		req.At, err = traceTime(ts, time.Second)
	}
	var in, out float64
	if err == nil {
		in, err = get(burstRequest)
	}
	if err == nil {
		out, err = get(burstResponse)
	}
	if err == nil {
		req.InputLen, err = traceTokens(burstRequest, in, 0)
	}
	if err == nil {
		req.OutputLen, err = traceTokens(burstResponse, out, 0)
	}
	return req, err == nil && (req.InputLen == 0 || req.OutputLen == 0), err
}

// lineCap fails a read once a line passes maxDatasetLine, so that a CSV
// field without an end cannot grow without bound.
type lineCap struct {
	r   *bufio.Reader
	run int
}

func (l *lineCap) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			l.run = 0
		} else if l.run++; l.run > maxDatasetLine {
			return 0, fmt.Errorf("a line is past %d bytes", maxDatasetLine)
		}
	}
	return n, err
}
