// Package sglanglog reads SGLang's server log (python -m
// sglang.launch_server, 0.3 to 0.5 and later): its "[DATE TIME TP0] "
// prefixes (with DP, PP, EP, ... ranks), the weights' load ("Load weight
// begin/end", its memory and time), the KV pool ("KV Cache is allocated.
// #tokens: N, K size: …, V size: …", "max_total_num_tokens=N"), CUDA (or
// NPU) graph capture, readiness ("The server is fired up and ready to
// roll!") and failures ("Scheduler hit an exception", tracebacks, "Received
// sigquit from a child process", OOM). It is a dialect of vllmlog: the same
// line cleaning, traceback reading, failure model and summary.
package sglanglog

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases/load/internal/logfield"
	"github.com/profdeck/profdeck/phases/load/vllmlog"
)

// Engine is the engine name records and summaries carry.
const Engine = "sglang"

var (
	// "[2025-10-16 09:06:22 TP5] ", "[2025-07-02 07:41:58 DP0 TP0] ",
	// "[2025-11-30 12:50:10] ", with milliseconds in some builds.
	prefixRe = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:[.,]\d+)?((?: [A-Z][A-Z_]{0,11}\d+){0,6})\] ?`)
	rankRe   = regexp.MustCompile(`\b(TP|DP|PP|EP|CP)(\d+)\b`)

	loadEndRe  = regexp.MustCompile(`^Load weight end\.(?: elapsed=([\d.]+) s,)?.*?mem usage=(-?[\d.]+) GB`)
	kvAllocRe  = regexp.MustCompile(`^KV Cache is allocated\. (?:dtype: [\w.]+, )?#tokens: (\d+), (?:K size: ([\d.]+) GB, V size: ([\d.]+) GB|KV size: ([\d.]+) GB)`)
	maxTokRe   = regexp.MustCompile(`^max_total_num_tokens=(\d+)`)
	graphEndRe = regexp.MustCompile(`^Capture (?:cuda|npu|CUDA|NPU) graph end\. Time elapsed: ([\d.]+) s(?:\. mem usage=([\d.]+) GB)?`)
	graphBarRe = regexp.MustCompile(`^Capturing batches \([^)]*\):\s*(\d+)%\|[^|]*\|\s*(\d+)/(\d+)`)
)

// Dialect reads SGLang's log for vllmlog.
type Dialect struct{}

// Engine is "sglang".
func (Dialect) Engine() string { return Engine }

// markers are messages only SGLang prints.
var markers = []string{
	"server_args=ServerArgs(", "Load weight begin.", "Load weight end.", "KV Cache is allocated.",
	"Memory pool end.", "Capture cuda graph", "Capture npu graph", "The server is fired up and ready to roll",
	"Scheduler hit an exception", "Received sigquit from a child proces", "sglang is using nccl",
	"max_total_num_tokens=", "/sglang/srt/", "Init torch distributed begin.",
}

// Detect reports whether a cleaned line can only be SGLang's.
func (Dialect) Detect(text string) bool {
	if m := prefixRe.FindStringSubmatch(text); m != nil && m[3] != "" {
		return true // a rank-tagged stamp: "[… TP0] "
	}
	for _, mk := range markers {
		if strings.Contains(text, mk) {
			return true
		}
	}
	return false
}

// Split reads the "[DATE TIME RANKS] " prefix.
func (Dialect) Split(text string) (vllmlog.Prefix, string, bool) {
	m := prefixRe.FindStringSubmatchIndex(text)
	if m == nil {
		return vllmlog.Prefix{}, text, false
	}
	p := vllmlog.Prefix{Rank: -1, Time: text[m[4]:m[5]]}
	if m[6] < m[7] {
		p.Proc = strings.TrimSpace(text[m[6]:m[7]])
		p.Rank = rankOf(p.Proc)
	}
	return p, text[m[1]:], true
}

// rankOf is the rank a prefix names: its TP rank (SGLang numbers TP ranks
// across the data-parallel groups of DP attention), else its first rank.
func rankOf(proc string) int {
	first := -1
	for _, m := range rankRe.FindAllStringSubmatch(proc, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil || n > 1<<20 {
			continue
		}
		if m[1] == "TP" {
			return n
		}
		if first < 0 {
			first = n
		}
	}
	if first < 0 {
		return 0 // a rank tag of another kind: a rank all the same
	}
	return first
}

// Classify sets r's kind from SGLang's own messages.
func (Dialect) Classify(r *vllmlog.Record) bool {
	msg := r.Msg
	switch {
	case strings.HasPrefix(msg, "Load weight begin"):
		r.Kind = vllmlog.KindLoadStart
	case strings.HasPrefix(msg, "Load weight end"):
		m := loadEndRe.FindStringSubmatch(msg)
		if m == nil {
			return false
		}
		r.Kind, r.GiB, r.Seconds = vllmlog.KindModelLoaded, logfield.Float(m[2]), logfield.Float(m[1])
	case strings.HasPrefix(msg, "KV Cache is allocated"):
		m := kvAllocRe.FindStringSubmatch(msg)
		if m == nil {
			return false
		}
		r.Kind, r.Tokens, r.GiB = vllmlog.KindKVCache, logfield.Int(m[1]), logfield.Float(m[2])+logfield.Float(m[3])+logfield.Float(m[4])
	case strings.HasPrefix(msg, "max_total_num_tokens="):
		m := maxTokRe.FindStringSubmatch(msg)
		if m == nil {
			return false
		}
		r.Kind, r.Tokens = vllmlog.KindKVCache, logfield.Int(m[1])
	case strings.HasPrefix(msg, "Memory pool end"), strings.Contains(msg, "is larger than the profiled value"),
		strings.HasPrefix(msg, "Using KV cache dtype"):
		r.Kind = vllmlog.KindMemoryPool
	case strings.HasPrefix(msg, "Capture cuda graph end"), strings.HasPrefix(msg, "Capture npu graph end"),
		strings.HasPrefix(msg, "Capture CUDA graph end"):
		m := graphEndRe.FindStringSubmatch(msg)
		if m == nil {
			return false
		}
		r.Kind, r.Seconds, r.GiB = vllmlog.KindGraphsDone, logfield.Float(m[1]), logfield.Float(m[2])
	case strings.HasPrefix(msg, "Capture cuda graph"), strings.HasPrefix(msg, "Capture npu graph"),
		strings.HasPrefix(msg, "Registering") && strings.Contains(msg, "cuda graph addresses"):
		r.Kind = vllmlog.KindGraphs
	case strings.HasPrefix(msg, "Capturing batches"):
		r.Kind = vllmlog.KindGraphs
		if m := graphBarRe.FindStringSubmatch(msg); m != nil {
			r.Bar = &vllmlog.Bar{Desc: "Capturing batches", Pct: int(logfield.Int(m[1])), Done: int(logfield.Int(m[2])), Total: int(logfield.Int(m[3])),
				ElapsedS: -1, RemainingS: -1}
		}
	case strings.Contains(msg, "The server is fired up and ready to roll"):
		r.Kind = vllmlog.KindReady
	case strings.HasPrefix(msg, "Scheduler hit an exception"), strings.HasPrefix(msg, "DataParallelController hit an exception"),
		strings.HasPrefix(msg, "Received sigquit from a child proces"), strings.HasPrefix(msg, "TokenizerManager hit an exception"),
		strings.HasPrefix(msg, "DetokenizerManager hit an exception"):
		r.Kind, r.Failure = vllmlog.KindFailure, vllmlog.FailEngineFailed
	default:
		return false
	}
	return true
}

// Message is an SGLang line's message without its "[DATE TIME TP0] "
// prefix; ok is false for a line without one.
func Message(line string) (string, bool) {
	_, msg, ok := Dialect{}.Split(strings.TrimSpace(line))
	return strings.TrimSpace(msg), ok
}
