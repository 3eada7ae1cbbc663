// Package vllmlog reads vLLM's startup log, every era from v0.5 to current,
// as it arrives: it cleans each physical line (transport wrappers, ANSI
// colour in its three encodings, tqdm carriage returns, glued lines), reads
// the process prefix and logger header, and classifies the message into
// records (shard progress, weights loaded, KV cache, compile, CUDA graphs,
// readiness, failures). It is pure: no I/O, no clock. Unknown lines are
// normal and are returned as KindOther, never as an error.
package vllmlog

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	// ANSI SGR and friends, raw ESC, rsyslog octal "#033", caret "^[".
	ansiRe = regexp.MustCompile(`(?:\x1b|\^\[|#033)\[[0-9;?]*[A-Za-z]`)
	// Transport wrappers that come before everything else.
	dockerTSRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z `)
	djlRe      = regexp.MustCompile(`^\[?INFO \] PyProcess - W-\d+-model-std(?:out|err): `)
	torchsRe   = regexp.MustCompile(`^.*? MODEL_LOG - `)
	ansibleRe  = regexp.MustCompile(`^\S+ \| [A-Z]+ \| rc=\d+ \| \((?:stdout|stderr)\) `)
	rayDupRe   = regexp.MustCompile(` \[repeated \d+x across cluster\]$`)
	// journald: "Aug 15 18:15:59 HOST UNIT[PID]: ".
	journaldRe = regexp.MustCompile(`^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@/-]+(?:\[\d+\])?: `)
	// docker compose's service column: "NAME-1  | ".
	composeRe = regexp.MustCompile(`^[A-Za-z0-9][\w.-]*\s+\| `)
	// A launcher's tag or date before the line: "[SERVER] ", "[vllm] ",
	// "2026-05-08 11:47:02.257 [Error] (Process) ".
	tagRe      = regexp.MustCompile(`^\[[A-Za-z][\w .-]{0,23}\](?: |$)`)
	launcherRe = regexp.MustCompile(`^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? (?:\[\w+ ?\] )?(?:\(\w+\) )?`)
	// Python logging's prefix on a child's re-logged stderr:
	// "2025-06-27 12:57:51,690 - __main__ - INFO - ".
	pyLogRe = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? - [\w.]+ - [A-Z]+ - `)
	// A Rust tracing subscriber's level and target (Dynamo's re-logged
	// lines, after their RFC 3339 time): " INFO model_runner.load_model: ".
	tracingRe = regexp.MustCompile(`^ ?(?:TRACE|DEBUG|INFO|WARN|ERROR) +[\w.:]+: `)
	// A console's table export: "2025-07-18 11:29:37.824 | worker |   | ".
	tableRe = regexp.MustCompile(`^\d{4}-\d\d-\d\d[ T][\d:.]+ \| \w+ \| +\| `)
	// Kubernetes log viewers' pod or container column: "[pod/NAME/CONTAINER] ",
	// "kserve-container ".
	podRe = regexp.MustCompile(`^\[pod/[^\]\s]+\] |^[a-z][a-z0-9-]*-container `)
	// Markup a paste carries: a Markdown quote or code span, a log
	// viewer's box border, an HTML export's tags.
	quoteRe = regexp.MustCompile(`^(?:> ?|` + "`" + `|│ ?)`)
	htmlRe  = regexp.MustCompile(`</?(?:font|b|span|i|code)(?:\s[^>]*)?>`)
	// torch's per-rank stderr prefix: "[rank0]: ".
	torchRankRe = regexp.MustCompile(`^\[rank(\d{1,6})\]: ?`)
	// Process prefix: (Name[ rank=R] pid=N[, ip=A.B.C.D]).
	prefixRe = regexp.MustCompile(`^\(([A-Za-z][\w]*)(?: rank=(\d+)| TP(\d+))? pid=(\d+)(?:, ip=([\d.:a-fA-F]+))?\)\s?`)
	// Where a glued line starts: a process prefix or a torch C++ "[rankN]:[" warning.
	glueRe = regexp.MustCompile(`\((?:VllmWorkerProcess|VllmWorker|Worker|EngineCore|APIServer|RayWorkerWrapper)[^)]*pid=\d+|\[rank\d+\]:\[`)
	// Logger header; V0 has no opening bracket before the file name.
	headerRe = regexp.MustCompile(`^(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.\d+)? \[?([\w./-]+\.py):(\d+)\] ?`)
	// Ranks carried in a process name: Worker_DP0_TP2_EP2, Worker_TP3, Worker_PP0, EngineCore_DP1, EngineCore_3.
	nameRankRe = regexp.MustCompile(`(?:^|_)(DP|PP|TP|EP)(\d+)`)
)

// cleanLine removes transport wrappers, ANSI codes, stray control bytes and
// Ray's dedup suffix from one physical line segment.
func cleanLine(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.Contains(s, "[") && (strings.Contains(s, "\x1b") || strings.Contains(s, "^[") || strings.Contains(s, "#033")) {
		s = ansiRe.ReplaceAllString(s, "")
	}
	s = strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	s = strings.ReplaceAll(s, "^O", "")
	s = stripMarkup(s)
	// Wrappers nest (journald around a launcher's tag): peel until none is left.
	for pass := 0; pass < 4; pass++ {
		before := len(s)
		for _, w := range wrappers {
			if w.may(s) {
				if loc := w.re.FindStringIndex(s); loc != nil && loc[1] > 0 {
					s = s[loc[1]:]
				}
			}
		}
		if len(s) == before {
			break
		}
	}
	s = strings.TrimRight(s, " ")
	if strings.HasSuffix(s, "│") {
		s = strings.TrimRight(strings.TrimSuffix(s, "│"), " ")
	}
	if strings.HasSuffix(s, "`") && !strings.Contains(s, "`"+"`") {
		s = strings.TrimSuffix(s, "`")
	}
	if strings.HasSuffix(s, "across cluster]") {
		s = rayDupRe.ReplaceAllString(s, "")
	}
	// Pasted logs are sometimes indented by four spaces.
	if strings.HasPrefix(s, "    (") || strings.HasPrefix(s, "    INFO ") || strings.HasPrefix(s, "    Loading ") {
		s = strings.TrimLeft(s, " ")
	}
	return s
}

// wrappers are the transport prefixes, each with a cheap test of whether
// the line may start with it before the regular expression runs.
var wrappers = []struct {
	may func(string) bool
	re  *regexp.Regexp
}{
	{contains("Z "), dockerTSRe}, {contains("PyProcess - W-"), djlRe}, {contains(" | rc="), ansibleRe},
	{contains(" MODEL_LOG - "), torchsRe},
	{func(s string) bool {
		return len(s) > 20 && s[3] == ' ' && s[0] >= 'A' && s[0] <= 'Z' && strings.Contains(s, "]: ")
	}, journaldRe},
	{func(s string) bool {
		i := strings.Index(s, " | ")
		return i > 0 && i < 80 && !strings.Contains(strings.TrimRight(s[:i], " "), " ")
	}, composeRe},
	{func(s string) bool { return len(s) > 1 && s[0] == '[' && !strings.HasPrefix(s, "[rank") }, tagRe},
	{func(s string) bool { return len(s) > 20 && s[4] == '-' && strings.Contains(s[:min(len(s), 40)], " - ") }, pyLogRe},
	{func(s string) bool { return len(s) > 20 && s[4] == '-' && strings.Contains(s[:min(len(s), 40)], " | ") }, tableRe},
	{func(s string) bool { return len(s) > 20 && s[4] == '-' && s[0] >= '0' && s[0] <= '9' }, launcherRe},
	{func(s string) bool {
		return len(s) > 8 && (s[0] == ' ' || s[0] >= 'A' && s[0] <= 'Z') && strings.Contains(s[:min(len(s), 64)], ": ")
	}, tracingRe},
	{func(s string) bool {
		return len(s) > 10 && (s[0] == '[' || strings.Contains(s[:min(len(s), 64)], "-container "))
	}, podRe},
}

// stripMarkup removes what a paste wraps a log line in: a Markdown quote
// or code span, a log viewer's box border, HTML tags and entities.
func stripMarkup(s string) string {
	if len(s) > 0 && (s[0] == '>' || s[0] == '`' || strings.HasPrefix(s, "│")) {
		s = quoteRe.ReplaceAllString(s, "")
	}
	if strings.Contains(s, "</") || strings.Contains(s, "<font") {
		s = htmlRe.ReplaceAllString(s, "")
	}
	if strings.Contains(s, "&") && strings.Contains(s, ";") {
		s = htmlEntities.Replace(s)
	}
	return s
}

var htmlEntities = strings.NewReplacer("&apos;", "'", "&quot;", "\"", "&amp;", "&", "&lt;", "<", "&gt;", ">", "&#39;", "'")

func contains(lit string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, lit) }
}

// splitSegments splits one received line into the segments vLLM actually
// wrote: tqdm's carriage returns (raw or caret "^M"), and lines glued to the
// end of a progress bar with no newline.
func splitSegments(line string) []string {
	line = strings.ReplaceAll(line, "^M", "\r")
	var out []string
	for _, part := range strings.Split(line, "\r") {
		for _, g := range splitGlued(part) {
			out = appendCollapsed(out, g)
		}
	}
	return out
}

// recordStartRe finds, after a space, where another log record begins in a
// line whose newlines were collapsed into spaces: a process prefix, a logger
// header, or a shard bar.
var (
	recordStartRe = regexp.MustCompile(` ` + recordStart)
	recordInRe    = regexp.MustCompile(recordStart)
)

const recordStart = `(?:\((?:VllmWorkerProcess|VllmWorker|Worker|EngineCore|APIServer|RayWorkerWrapper)[^)]{0,40}pid=\d+\)|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d|Loading safetensors checkpoint shards: +\d{1,3}% Completed)`

// appendCollapsed appends the records of a pasted line that holds several log records. A
// header right after a process prefix belongs to it and is not cut off, and
// a cut is made only after text that holds a record of its own (not after a
// wrapper such as "[SERVER]" or journald's "HOST UNIT[PID]:").
func appendCollapsed(out []string, s string) []string {
	if len(s) < 80 || recordStarts(s) < 2 {
		return append(out, s)
	}
	start := 0
	for _, loc := range recordStartRe.FindAllStringIndex(s, -1) {
		i := loc[0]
		if i <= start || strings.HasSuffix(s[:i], ")") && s[i+1] != '(' || !recordInRe.MatchString(s[start:i]) {
			continue
		}
		out = append(out, s[start:i])
		start = i + 1
	}
	return append(out, s[start:])
}

func splitGlued(s string) []string {
	if !strings.Contains(s, "](") && !strings.Contains(s, "][rank") && !strings.Contains(s, "] (") {
		return []string{s}
	}
	var out []string
	for {
		locs := glueRe.FindAllStringIndex(s, -1)
		cut := -1
		for _, l := range locs {
			if l[0] > 0 && gluedAfter(s[:l[0]]) {
				cut = l[0]
				break
			}
		}
		if cut < 0 {
			return append(out, s)
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
}

// gluedAfter reports whether head ends like a progress bar (or download bar)
// tail, after which a new line may have been glued without a newline.
func gluedAfter(head string) bool {
	h := ansiRe.ReplaceAllString(head, "")
	h = strings.TrimRight(h, " ")
	return strings.HasSuffix(h, "]")
}

// proc is a parsed process prefix.
type proc struct {
	name string
	pid  int
	rank int    // -1 when the prefix names no rank
	host string // Ray's "ip=" address, "" when none
	// glued is another process whose prefix was printed into this one's
	// (two workers writing at once), nil when none.
	glued *proc
}

// parsePrefix reads a process prefix at the start of s.
// Prefixes can nest ("(Worker pid=1) (Worker_DP0_TP6_EP6 pid=1) …"): the
// innermost one names the process most precisely.
func parsePrefix(s string) (proc, string, bool) {
	p, rest, ok := parseOnePrefix(s)
	for i := 0; ok && i < 3 && strings.HasPrefix(rest, "("); i++ {
		inner, r, more := parseOnePrefix(rest)
		if !more {
			break
		}
		if inner.rank < 0 && inner.pid == p.pid {
			inner.rank = p.rank
		}
		if inner.pid != p.pid && p.rank >= 0 && inner.rank >= 0 && inner.rank != p.rank && inner.name == p.name {
			outer := p
			outer.glued = nil
			inner.glued = &outer
		}
		if inner.host == "" {
			// A nested worker runs on its outer actor's host.
			inner.host = p.host
		}
		p, rest = inner, r
	}
	return p, rest, ok
}

func parseOnePrefix(s string) (proc, string, bool) {
	m := prefixRe.FindStringSubmatchIndex(s)
	if m == nil {
		return proc{rank: -1}, s, false
	}
	p := proc{name: s[m[2]:m[3]], rank: -1}
	if m[4] >= 0 {
		p.rank, _ = strconv.Atoi(s[m[4]:m[5]])
	} else if m[6] >= 0 {
		p.rank, _ = strconv.Atoi(s[m[6]:m[7]])
	}
	p.pid, _ = strconv.Atoi(s[m[8]:m[9]])
	if m[10] >= 0 {
		p.host = s[m[10]:m[11]]
	}
	if p.rank < 0 {
		p.rank = rankFromName(p.name)
	}
	return p, s[m[1]:], true
}

// rankFromName derives a worker's rank from names like Worker_TP3,
// Worker_DP0_TP2_EP2 or Worker_PP1. The TP rank is used when present, then
// the PP rank; it is the rank within its data-parallel group, which is what
// a GPU bar needs on a single host. Names without ranks give -1.
func rankFromName(name string) int {
	if !strings.HasPrefix(name, "Worker") {
		return -1
	}
	tp, pp := -1, -1
	for _, m := range nameRankRe.FindAllStringSubmatch(name, -1) {
		n, _ := strconv.Atoi(m[2])
		switch m[1] {
		case "TP":
			tp = n
		case "PP":
			pp = n
		}
	}
	if tp >= 0 {
		return tp
	}
	return pp
}

// header is a parsed logger header.
type header struct {
	level string
	file  string
	time  string
}

func parseHeader(s string) (header, string, bool) {
	m := headerRe.FindStringSubmatchIndex(s)
	if m == nil {
		return header{}, s, false
	}
	return header{level: s[m[2]:m[3]], file: s[m[8]:m[9]], time: s[m[6]:m[7]]}, s[m[1]:], true
}

// recordStarts is a cheap count of the places where a record may start in
// s: logger levels between spaces, shard bars, and a header at its start.
func recordStarts(s string) int {
	n := strings.Count(s, "Loading safetensors checkpoint shards:")
	for _, lv := range []string{" INFO ", " WARNING ", " ERROR ", " DEBUG ", " CRITICAL "} {
		n += strings.Count(s, lv)
	}
	for _, lv := range []string{"INFO ", "WARNING ", "ERROR ", "DEBUG "} {
		if strings.HasPrefix(s, lv) {
			n++
		}
	}
	return n
}
