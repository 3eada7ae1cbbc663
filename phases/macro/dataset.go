package macro

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/profdeck/profdeck/remote/localfs"
)

// Dataset kinds.
const (
	DatasetRandom   = "random"
	DatasetShareGPT = "sharegpt"
	DatasetJSONL    = "jsonl"
)

// Bounds on what a dataset may hold in memory.
const (
	maxDatasetItems = 100_000
	maxDatasetLine  = 16 << 20 // one JSONL line, or one ShareGPT entry
	maxPromptBytes  = 1 << 20
	// MaxDatasetBytes bounds the prompts kept in memory together: a sample
	// past it is refused, naming --dataset-max.
	MaxDatasetBytes = 64 << 20
)

// Workload is what the sweep sent, recorded in its result so that a run
// can be repeated: the dataset, its seed and its shape.
type Workload struct {
	Dataset    string  `json:"dataset"`
	File       string  `json:"file,omitempty"`
	Items      int     `json:"items,omitempty"` // prompts read from the file (after filtering)
	Seed       int64   `json:"seed"`
	RangeRatio float64 `json:"range_ratio,omitempty"`
	PrefixLen  int     `json:"prefix_len,omitempty"`
	Note       string  `json:"note,omitempty"`
	// Trace is the replayed trace window: its requests, rate and the
	// prefix reuse its hash ids imply (beside the levels' server hit rate).
	Trace *TraceSummary `json:"trace,omitempty"`
	// ThinkTimeS and SessionHeader are a multi-turn dataset's think time
	// between turns and the header naming the session.
	ThinkTimeS    float64 `json:"think_time_s,omitempty"`
	SessionHeader string  `json:"session_header,omitempty"`
}

// item is one prompt and the output length asked for it.
type item struct {
	prompt    string
	words     int // the prompt's length in words (its token estimate)
	outputLen int
}

// dataset hands out the sweep's prompts, in a seeded order.
type dataset struct {
	items  []item
	bytes  int // the kept prompts' length
	next   int
	prefix string // the shared prefix, made once
	rng    *rand.Rand
}

// loadDataset reads the configured dataset (nil for random prompts).
// Errors name the file and the line.
func loadDataset(cfg Config) (*dataset, error) {
	switch cfg.Dataset {
	case "", DatasetRandom, TraceMooncake, TraceBailian, TraceBurstGPT, DatasetConversations, DatasetSessions:
		return nil, nil // a trace is read by traceLevel, sessions by workload
	case DatasetShareGPT, DatasetJSONL:
	default:
		return nil, fmt.Errorf("--dataset %q: want random, sharegpt FILE, jsonl FILE, conversations FILE, sessions FILE or a trace", cfg.Dataset)
	}
	if cfg.DatasetFile == "" {
		return nil, fmt.Errorf("--dataset %s: a FILE is required", cfg.Dataset)
	}
	f, err := localfs.OpenInput(cfg.DatasetFile) // a FIFO or a device is refused
	if err != nil {
		return nil, fmt.Errorf("--dataset %s %s: %v", cfg.Dataset, cfg.DatasetFile, err)
	}
	defer f.Close()
	ds := &dataset{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed))}
	keep := maxDatasetItems
	if cfg.DatasetMax > 0 {
		keep = min(keep, cfg.DatasetMax)
	}
	if cfg.Dataset == DatasetJSONL {
		err = ds.readJSONL(f, cfg.DatasetFile, keep)
	} else {
		err = ds.readShareGPT(f, cfg.DatasetFile, keep)
	}
	if err != nil {
		return nil, err
	}
	if len(ds.items) == 0 {
		return nil, fmt.Errorf("%s: no usable prompt in the dataset", cfg.DatasetFile)
	}
	return ds, nil
}

// add keeps a seeded random sample of at most keep items (reservoir
// sampling: memory stays bounded whatever the file's size), and refuses a
// sample whose prompts pass MaxDatasetBytes together.
func (ds *dataset) add(it item, seen, keep int) error {
	if len(ds.items) < keep {
		ds.items = append(ds.items, it)
		ds.bytes += len(it.prompt)
	} else if j := ds.rng.IntN(seen); j < keep {
		ds.bytes += len(it.prompt) - len(ds.items[j].prompt)
		ds.items[j] = it
	}
	if ds.bytes > MaxDatasetBytes {
		return fmt.Errorf("the %d prompts kept so far hold over %d MiB: sample fewer with --dataset-max (macro.dataset_max)", len(ds.items), MaxDatasetBytes>>20)
	}
	return nil
}

// readJSONL reads {"prompt": "...", "output_len": N} per line.
func (ds *dataset) readJSONL(r io.Reader, name string, keep int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxDatasetLine)
	line, seen := 0, 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var v struct {
			Prompt    *string `json:"prompt"`
			OutputLen *int    `json:"output_len"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("%s:%d: not a JSON object: %v", name, line, err)
		}
		switch {
		case v.Prompt == nil || strings.TrimSpace(*v.Prompt) == "":
			return fmt.Errorf("%s:%d: no \"prompt\" string", name, line)
		case v.OutputLen == nil || *v.OutputLen < 2 || *v.OutputLen > MaxOutputLen:
			return fmt.Errorf("%s:%d: \"output_len\" must be a whole number from 2 to %d", name, line, MaxOutputLen)
		case len(*v.Prompt) > maxPromptBytes:
			return fmt.Errorf("%s:%d: prompt longer than %d bytes", name, line, maxPromptBytes)
		}
		seen++
		if err := ds.add(item{prompt: *v.Prompt, words: len(strings.Fields(*v.Prompt)), outputLen: *v.OutputLen}, seen, keep); err != nil {
			return fmt.Errorf("%s:%d: %v", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: a line longer than %d MiB", name, line+1, maxDatasetLine>>20)
		}
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

// shareGPTEntry is one conversation as vLLM reads it.
type shareGPTEntry struct {
	Conversations []struct {
		Value string `json:"value"`
	} `json:"conversations"`
}

// readShareGPT reads a ShareGPT JSON list as vLLM does: the first turn is
// the prompt, the second's length the output length; entries with fewer
// than two turns are dropped, and so are those vLLM filters out (prompt
// under 4 or over 1,024 tokens, output under 4, both over 2,048).
func (ds *dataset) readShareGPT(r io.Reader, name string, keep int) error {
	cr := &lineCounter{r: bufio.NewReaderSize(r, 64<<10)}
	dec := json.NewDecoder(cr)
	at := func(err error) error {
		// A syntax or type error knows its offset in the stream; else the
		// decoder's position is the value's start.
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off = te.Offset
		}
		return fmt.Errorf("%s:%d: not a ShareGPT JSON list: %v", name, cr.lineAt(off), err)
	}
	tok, err := dec.Token()
	if err != nil {
		return at(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return at(errors.New("want a list of conversations"))
	}
	seen := 0
	for dec.More() {
		cr.start = dec.InputOffset()
		var e shareGPTEntry
		if err := dec.Decode(&e); err != nil {
			return at(err)
		}
		if len(e.Conversations) < 2 {
			continue
		}
		p, o := e.Conversations[0].Value, e.Conversations[1].Value
		pw, ow := len(strings.Fields(p)), len(strings.Fields(o))
		if pw < 4 || pw > 1024 || ow < 4 || pw+ow > 2048 || len(p) > maxPromptBytes {
			continue
		}
		seen++
		if err := ds.add(item{prompt: p, words: pw, outputLen: ow}, seen, keep); err != nil {
			return at(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return at(err)
	}
	return nil
}

// lineCounter counts the newlines read, to name the line of an error.
type lineCounter struct {
	r     io.Reader
	off   int64
	start int64   // where the entry being read began
	marks []int64 // offsets of newlines, up to a bound
}

// errEntryTooLong bounds the memory one entry takes.
var errEntryTooLong = fmt.Errorf("an entry longer than %d MiB", maxDatasetLine>>20)

func (c *lineCounter) Read(p []byte) (int, error) {
	left := maxDatasetLine - (c.off - c.start)
	if left <= 0 {
		return 0, errEntryTooLong
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == '\n' && len(c.marks) < 1<<22 {
			c.marks = append(c.marks, c.off+int64(i))
		}
	}
	c.off += int64(n)
	return n, err
}

// lineAt is the 1-based line of offset off.
func (c *lineCounter) lineAt(off int64) int {
	n := 1
	for _, m := range c.marks {
		if m >= off {
			break
		}
		n++
	}
	return n
}

// take is the next prompt of the dataset (round the sample again when it
// runs out).
func (ds *dataset) take() item {
	if ds.next == 0 {
		ds.rng.Shuffle(len(ds.items), func(i, j int) { ds.items[i], ds.items[j] = ds.items[j], ds.items[i] })
	}
	it := ds.items[ds.next]
	ds.next = (ds.next + 1) % len(ds.items)
	return it
}

// spread draws a length in [floor(n(1-r)), ceil(n(1+r))] as vLLM's
// --random-range-ratio does, at least lo.
func spread(rng *rand.Rand, n int, r float64, lo int) int {
	if r <= 0 {
		return n
	}
	a := max(lo, int(math.Floor(float64(n)*(1-r))))
	b := max(lo, int(math.Ceil(float64(n)*(1+r))))
	return a + rng.IntN(b-a+1)
}

// LoadWorkload checks every value of cfg but its URL and reads the dataset
// now, so that a front-end can refuse bad input before it opens a host; the
// sweep then uses what was read.
func LoadWorkload(cfg *Config) error {
	if err := cfg.traceLevel(); err != nil {
		return err
	}
	if err := cfg.checkRequired(); err != nil {
		return err
	}
	if err := cfg.checkValues(); err != nil {
		return err
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	return cfg.workload()
}

// workload reads the dataset (once); its settings are checked already.
func (cfg *Config) workload() error {
	if cfg.ds != nil || cfg.conv != nil {
		return nil
	}
	if IsSessionDataset(cfg.Dataset) {
		if cfg.DatasetFile == "" {
			return fmt.Errorf("--dataset %s: a FILE is required", cfg.Dataset)
		}
		set, err := readConvSet(cfg.Dataset, cfg.DatasetFile, cfg.DatasetMax)
		if err != nil {
			return err
		}
		cfg.conv = newConvFeed(*cfg, set)
		return nil
	}
	ds, err := loadDataset(*cfg)
	if err != nil {
		return err
	}
	if ds == nil && (cfg.RangeRatio > 0 || cfg.PrefixLen > 0) {
		ds = &dataset{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed))}
	}
	cfg.ds = ds
	return nil
}

// fixedOutputLen is the output length every request asks for, or 0 when
// they differ (a dataset, a range ratio).
func (cfg Config) fixedOutputLen() int {
	if cfg.trace != nil || cfg.conv != nil || cfg.ds != nil && (len(cfg.ds.items) > 0 || cfg.RangeRatio > 0) {
		return 0
	}
	return cfg.OutputLen
}

// workloadRecord is the result's record of the workload.
func (cfg Config) workloadRecord() Workload {
	w := Workload{Dataset: DatasetRandom, Seed: cfg.Seed, RangeRatio: cfg.RangeRatio, PrefixLen: cfg.PrefixLen}
	if cfg.trace != nil {
		w.Dataset, w.File, w.Items, w.Trace = cfg.Dataset, cfg.DatasetFile, len(cfg.trace.reqs), cfg.TraceSummary()
		w.Note = "prompts made from the trace's hash ids (equal ids, equal blocks of words) and sent on its schedule"
	}
	if cfg.conv != nil {
		w.Dataset, w.File, w.Items = cfg.Dataset, cfg.DatasetFile, len(cfg.conv.set.convs)
		w.Note = "each level's concurrency is its users, each running sessions: every turn sends the history with the server's real answers"
		w.ThinkTimeS, w.SessionHeader = cfg.ThinkTime.Seconds(), cfg.SessionHeader
	}
	if cfg.ds != nil && len(cfg.ds.items) > 0 {
		w.Dataset, w.File, w.Items = cfg.Dataset, cfg.DatasetFile, len(cfg.ds.items)
		w.Note = "prompt and output lengths of the file's entries counted in words (an estimate of tokens; vLLM uses the model's tokenizer); the server's usage gives the counts measured"
	}
	return w
}

// nextPrompt is the next request's prompt, its input tokens (as far as
// known before the server counts them) and the output length to ask.
func (r *runner) nextPrompt() (prompt string, in, out int) {
	cfg := r.cfg
	if cfg.trace != nil {
		return cfg.trace.next(r.pg.tokensPerWrd)
	}
	w := cfg.ds
	if w == nil {
		return r.pg.make(cfg.InputLen), cfg.InputLen, cfg.OutputLen
	}
	if len(w.items) > 0 {
		it := w.take()
		prompt, in, out = it.prompt, it.words, it.outputLen
	} else {
		in = spread(w.rng, cfg.InputLen, cfg.RangeRatio, 1)
		out = spread(w.rng, cfg.OutputLen, cfg.RangeRatio, 2)
		prompt = r.pg.make(in)
	}
	if cfg.PrefixLen > 0 {
		if w.prefix == "" {
			w.prefix = r.pg.make(cfg.PrefixLen)
		}
		prompt, in = w.prefix+" "+prompt, in+cfg.PrefixLen
	}
	return prompt, in, out
}
