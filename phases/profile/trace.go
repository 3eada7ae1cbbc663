package profile

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/profdeck/profdeck/phases"
)

// traceEvent is the part of a Chrome trace event the summary needs; the
// decoder skips everything else (args, flows, metadata) without keeping it.
type traceEvent struct {
	Ph   string          `json:"ph"`
	Cat  string          `json:"cat"`
	Name string          `json:"name"`
	Dur  json.RawMessage `json:"dur"`
}

// deviceCats are the trace categories of work that runs on the GPU.
// "gpu_user_annotation" is a range over kernels, not work of its own.
var deviceCats = map[string]bool{"kernel": true, "gpu_memcpy": true, "gpu_memset": true, "memcpy": true, "memset": true}

// ParseTrace reads a torch.profiler Chrome trace (JSON, or gzip-compressed
// JSON: detected by its magic bytes) as a stream, event by event, and sums
// the device time of every kernel, memory copy and memset. It never holds
// the whole trace in memory: hundreds of MB are fine. Every token is
// bounded (MaxTraceString, MaxTraceNumber, MaxTraceDepth, MaxTraceEvent) and
// so is the decompressed size (MaxTraceBytes): a hostile trace is an error,
// never gigabytes of memory.
func ParseTrace(r io.Reader) (*phases.ProfileSummary, error) {
	return parseTrace(r, TopN, MaxTraceBytes)
}

// parseTrace reads at most max decompressed bytes (ErrTraceTooLarge past it).
func parseTrace(r io.Reader, top int, max int64) (*phases.ProfileSummary, error) {
	agg, n, err := scanTrace(r, max)
	if err != nil {
		return nil, err
	}
	if len(agg.order) == 0 {
		return nil, fmt.Errorf("trace: %d events but no device kernels (was the profile taken with ProfilerActivity.CUDA, and did it cover any GPU work?)", n)
	}
	src := fmt.Sprintf("trace: %d device kernels over %d events", len(agg.order), n)
	return agg.summary(src, 0, top), nil
}

// openMaybeGzip returns a reader of r's content, gunzipped when r starts
// with the gzip magic bytes.
func openMaybeGzip(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 256<<10)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("trace: gzip: %w", err)
		}
		return bufio.NewReaderSize(zr, 256<<10), func() { zr.Close() }, nil
	}
	return br, func() {}, nil
}

// scanTrace walks the trace's events: either {"traceEvents": [...], ...}
// or a bare array of events.
func scanTrace(r io.Reader, max int64) (*kernelAgg, int, error) {
	in, done, err := openMaybeGzip(r)
	if err != nil {
		return nil, 0, err
	}
	defer done()
	dec := json.NewDecoder(newGuard(in, max))
	dec.UseNumber()
	agg := newKernelAgg()
	tok, err := dec.Token()
	if err != nil {
		return nil, 0, traceErr(dec, "not JSON", err)
	}
	switch tok {
	case json.Delim('['):
		n, err := scanEvents(dec, agg)
		return agg, n, err
	case json.Delim('{'):
	default:
		return nil, 0, fmt.Errorf("trace: want a JSON object with traceEvents, or an array of events")
	}
	found := false
	total := 0
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, total, traceErr(dec, "bad object key", err)
		}
		key, _ := kt.(string)
		if key != "traceEvents" {
			if err := skipValue(dec); err != nil {
				return nil, total, traceErr(dec, "value of "+key, err)
			}
			continue
		}
		t, err := dec.Token()
		if err != nil || t != json.Delim('[') {
			return nil, total, traceErr(dec, "traceEvents is not an array", err)
		}
		n, err := scanEvents(dec, agg)
		total += n
		if err != nil {
			return nil, total, err
		}
		found = true
	}
	if !found {
		return nil, 0, fmt.Errorf("trace: no traceEvents array")
	}
	return agg, total, nil
}

// scanEvents decodes events up to the closing bracket of the array.
func scanEvents(dec *json.Decoder, agg *kernelAgg) (int, error) {
	n := 0
	for dec.More() {
		var ev traceEvent
		if err := dec.Decode(&ev); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				n++ // an event of an unexpected shape: skip it
				continue
			}
			return n, traceErr(dec, fmt.Sprintf("event %d", n+1), err)
		}
		n++
		if ev.Ph == "X" && stepMarkers[ev.Name] {
			agg.mark(strings.ToLower(ev.Cat), ev.Name)
		}
		if ev.Ph != "X" || !deviceCats[strings.ToLower(ev.Cat)] {
			continue
		}
		dur, ok := parseJSONNumber(ev.Dur)
		if !ok || dur < 0 {
			continue
		}
		agg.add(ev.Name, dur, 1)
	}
	if _, err := dec.Token(); err != nil {
		return n, traceErr(dec, "unterminated traceEvents", err)
	}
	return n, nil
}

func parseJSONNumber(raw json.RawMessage) (float64, bool) {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	if s == "" {
		return 0, false
	}
	v, ok := parseDur(s)
	return v, ok
}

// skipValue consumes one JSON value token by token, so a large value is not
// held in memory.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

func traceErr(dec *json.Decoder, what string, err error) error {
	if err == nil {
		err = errors.New("unexpected token")
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	var le *traceLimitError
	if errors.As(err, &le) || errors.Is(err, ErrTraceTooLarge) {
		return fmt.Errorf("trace: %w", err)
	}
	return fmt.Errorf("trace: %s at byte %d: %w", what, dec.InputOffset(), err)
}
