package macro

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
)

// The verdict classes: what limits throughput at a level.
const (
	LimitClient    = "client_bound"
	LimitKVCache   = "kv_cache"
	LimitMaxSeqs   = "max_num_seqs"
	LimitStep      = "engine_step"
	LimitUnknown   = "unknown"
	LimitPower     = "power_throttled"
	LimitClock     = "clock_throttled"
	kvFull         = 0.90 // KV cache use at which it is the limit
	mostOfTheLevel = 0.5  // share of scrapes that is "most of the level"
)

// Limits are what the sweep knows of the server's configured limits.
type Limits struct {
	// MaxNumSeqs is the engine's --max-num-seqs (0: not known); Source
	// says where it was read ("the launch command").
	MaxNumSeqs int
	Source     string
	// Looked says the launch command or the server's log was read (and
	// did not set it, when MaxNumSeqs is 0).
	Looked bool
}

var maxSeqsFlag = regexp.MustCompile(`--max[-_]num[-_]seqs(?:=|\s+)(\d+)`)

// MaxNumSeqsFromLaunch reads --max-num-seqs from a vLLM launch command
// (0 when it does not set it).
func MaxNumSeqsFromLaunch(cmd string) int {
	m := maxSeqsFlag.FindStringSubmatch(cmd)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// PlateauLimits are the limits the sweep judged its plateau with (none
// for a sweep without a plateau).
func PlateauLimits(p *phases.Plateau) Limits {
	if p == nil {
		return Limits{}
	}
	return Limits{MaxNumSeqs: p.MaxNumSeqs, Source: p.MaxNumSeqsSource, Looked: p.LimitsLooked}
}

// Explain classifies what limits throughput at level index i of levels,
// looking at the level above it (the one that did not add throughput) as
// well, and returns the class and one line a person can act on.
func Explain(levels []phases.LevelResult, i int, lim Limits) (reason, evidence string) {
	if i < 0 || i >= len(levels) {
		return LimitUnknown, "no such level"
	}
	at := levels[i]
	head := fmt.Sprintf("C=%d: ", at.Concurrency)
	if p := findPlateau(levels); p != nil && p.Concurrency == at.Concurrency {
		head = "plateau at " + head
	}
	var next *phases.LevelResult
	if i+1 < len(levels) {
		next = &levels[i+1]
	}
	// The client first: a level it limited measured the client.
	for _, l := range []*phases.LevelResult{&at, next} {
		if l != nil && l.ClientBound {
			return LimitClient, head + fmt.Sprintf("the client limited C=%d (%s) — run the client on a machine with more cores, "+
				"nearer the server, or lower --concurrency", l.Concurrency, l.ClientBoundReason)
		}
	}
	// The GPUs themselves: held at their power cap, or their clocks down.
	if reason, evidence, ok := gpuVerdict(levels, at, next); ok {
		return reason, head + evidence
	}
	// The server's side: the level above shows what stopped the growth.
	see := next
	if see == nil || see.Server == nil || !see.Server.Available {
		see = &at
	}
	if sl := see.Server; sl == nil || !sl.Available {
		why := "no /metrics was read (give --metrics-url)"
		if sl != nil && sl.Note != "" {
			why = "the server's /metrics could not be read: " + sl.Note
		}
		return LimitUnknown, head + "what saturated is unknown: " + why + "; the client's audit found no client limit"
	}
	reason, evidence = serverVerdict(levels, see, lim)
	return reason, head + evidence
}

// serverVerdict reads the server's side of level see: the KV cache, the
// scheduler's seats, the step, in that order.
func serverVerdict(levels []phases.LevelResult, see *phases.LevelResult, lim Limits) (reason, evidence string) {
	sl := see.Server
	where := fmt.Sprintf(" at C=%d", see.Concurrency)
	kv, waitingN := units.Pct(sl.MaxKVCacheUsage), units.Thousands(sl.MaxWaiting)
	waiting := sl.MaxWaiting > 0 && sl.WaitingShare >= mostOfTheLevel/2
	if (sl.MaxKVCacheUsage >= kvFull && waiting) || sl.Preemptions > 0 {
		// A preempted request goes back to wait: preemptions are waiting.
		return LimitKVCache, fmt.Sprintf("KV cache %s full, %s preemptions, %s waiting%s (kv_cache) — more KV cache: "+
			"raise --gpu-memory-utilization, lower --max-model-len, or --kv-cache-dtype fp8",
			kv, units.Thousands(sl.Preemptions), waitingN, where)
	}
	if atSeats(sl, lim, see.Concurrency) && waiting && sl.MaxKVCacheUsage < kvFull && sl.MaxRunning < float64(see.Concurrency) {
		return LimitMaxSeqs, fmt.Sprintf("%s%s, KV %s, %s waiting%s — raise --max-num-seqs", seatsText(sl.MaxRunning, lim), seatsShare(sl), kv, waitingN, where)
	}
	if !waiting && sl.MaxRunning >= 0.9*float64(see.Concurrency) {
		if grow, ok := tpotGrowth(levels, see); ok && grow {
			first := levels[0]
			// The level read is named first: it may be the one above the
			// level asked about.
			return LimitStep, fmt.Sprintf("at C=%d all its %d requests running, none waiting, KV %s, TPOT %s ms against %s ms at C=%d "+
				"(engine_step): the decode step grows with the batch — see the decode-time budget",
				see.Concurrency, see.Concurrency, kv, units.Ms(see.MedianTPOTms), units.Ms(first.MedianTPOTms), first.Concurrency)
		}
	}
	return LimitUnknown, fmt.Sprintf("no known limit shows%s: %s running at most, %s waiting, KV %s, %s preemptions, the client kept up",
		where, units.Thousands(sl.MaxRunning), waitingN, kv, units.Thousands(sl.Preemptions))
}

// atSeats says the scheduler's seats were full: the most requests running
// reached the known --max-num-seqs while a queue waited most of the level,
// or (the limit not known) the most running held for most of the level.
// Whole prefills between decode steps pull the scrapes' running count
// below the cap (a request being prefilled is not yet running), so with
// the limit known reaching it under a standing queue is enough.
func atSeats(sl *phases.ServerLevel, lim Limits, concurrency int) bool {
	if sl.MaxRunning <= 0 {
		return false
	}
	if lim.MaxNumSeqs > 0 {
		// A cap known from the launch, reached, with more clients than seats
		// queued most of the level: the seats bind even when whole prefills
		// between steps keep the running count under the cap half the time.
		full := sl.MaxRunning >= float64(lim.MaxNumSeqs)
		queued := concurrency > lim.MaxNumSeqs && sl.WaitingShare >= mostOfTheLevel
		return full && (sl.AtMaxRunningShare >= mostOfTheLevel || queued)
	}
	return sl.AtMaxRunningShare >= mostOfTheLevel
}

// seatsShare says how often the seats were full when that was under most
// of the level ("" otherwise): the mean running beside the cap.
func seatsShare(sl *phases.ServerLevel) string {
	if sl.AtMaxRunningShare >= mostOfTheLevel {
		return ""
	}
	return fmt.Sprintf(" — at the cap in %s of the scrapes, %.1f running on average (a request in its prefill is not yet running), a queue in %s",
		units.Pct(sl.AtMaxRunningShare), sl.MeanRunning, units.Pct(sl.WaitingShare))
}

// seatsText is the running sequences against the max_num_seqs limit, and
// where the limit was read (or that it was not).
func seatsText(running float64, lim Limits) string {
	n := units.Thousands(running)
	switch {
	case lim.MaxNumSeqs > 0 && lim.Source != "":
		return fmt.Sprintf("%s of %d sequences running (max_num_seqs, from %s)", n, lim.MaxNumSeqs, lim.Source)
	case lim.MaxNumSeqs > 0:
		return fmt.Sprintf("%s of %d sequences running (max_num_seqs)", n, lim.MaxNumSeqs)
	case lim.Looked:
		return fmt.Sprintf("at most %s sequences running (max_num_seqs, not set at launch)", n)
	}
	return fmt.Sprintf("at most %s sequences running (max_num_seqs, its value not known here)", n)
}

// tpotGrowth says whether TPOT grew by more than a third from the first
// level to see (the step grows with the batch).
func tpotGrowth(levels []phases.LevelResult, see *phases.LevelResult) (grew, ok bool) {
	first := levels[0]
	if first.MedianTPOTms <= 0 || see.MedianTPOTms <= 0 || first.Concurrency >= see.Concurrency {
		return false, false
	}
	return see.MedianTPOTms > 1.33*first.MedianTPOTms, true
}

// explainPlateau fills the plateau's reason and evidence, and the limits
// it judged with.
func explainPlateau(p *phases.Plateau, levels []phases.LevelResult, lim Limits) {
	p.MaxNumSeqs, p.MaxNumSeqsSource, p.LimitsLooked = lim.MaxNumSeqs, lim.Source, lim.Looked
	for i, l := range levels {
		if l.Concurrency == p.Concurrency && l.Rate == 0 {
			p.Reason, p.Evidence = Explain(levels, i, lim)
			return
		}
	}
}

// VerdictLine is the plateau's line for a person: its evidence, and the
// SLO and noise notes beside it.
func VerdictLine(p *phases.Plateau) string {
	if p == nil {
		return ""
	}
	parts := []string{p.Evidence}
	if p.Evidence == "" {
		parts[0] = fmt.Sprintf("plateau at C=%d", p.Concurrency)
	}
	if p.SLO != "" {
		parts = append(parts, p.SLO)
	}
	if p.Noise != "" {
		parts = append(parts, p.Noise)
	}
	return strings.Join(parts, "; ")
}

// The log lines that carry max_num_seqs: vLLM's "non-default args: {...
// 'max_num_seqs': 64 ...}", its DEBUG "Setting max_num_seqs to 256", and
// a config dump's "max_num_seqs=256".
var maxSeqsLog = regexp.MustCompile(`'max_num_seqs':\s*(\d+)|max_num_seqs to (\d+)|max_num_seqs=(\d+)`)

// MaxNumSeqsFromLog reads max_num_seqs from a vLLM log's start-up lines
// (0 when none says it); the last mention wins (a restarted server).
func MaxNumSeqsFromLog(text string) int {
	n := 0
	for _, m := range maxSeqsLog.FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			if v, err := strconv.Atoi(g); err == nil && v > 0 {
				n = v
			}
		}
	}
	return n
}

// logHead bounds what is read of the server's log for its limits.
const (
	logHeadLines = 5000
	logHeadBytes = 4 << 20
)

// readLimits fills what the launch command did not say from the start of
// the server's log on the host.
func readLimits(ctx context.Context, cfg Config) Limits {
	lim := cfg.Limits
	if lim.MaxNumSeqs > 0 || cfg.Host == nil || cfg.ServerLog == "" {
		return lim
	}
	var b strings.Builder
	err := cfg.Host.Run(ctx, "head -n "+strconv.Itoa(logHeadLines)+" "+remote.QuotePath(cfg.ServerLog), nil, func(l remote.Line) {
		if l.Stream == remote.Stdout && b.Len() < logHeadBytes {
			b.WriteString(l.Text)
			b.WriteByte('\n')
		}
	})
	if err != nil {
		return lim
	}
	lim.Looked = true
	if n := MaxNumSeqsFromLog(b.String()); n > 0 {
		lim.MaxNumSeqs, lim.Source = n, "the server log"
	}
	return lim
}
