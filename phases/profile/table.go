package profile

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/profdeck/profdeck/phases"
)

// maxLine is the longest line the table parser keeps; longer lines are
// skipped (no profiler table row is that long).
const maxLine = 1 << 20

var (
	// A vLLM logger prefix, for tables logged row by row:
	// "(EngineCore_DP0 pid=44565) INFO 11-05 13:22:49 [cpu_worker.py:210] ".
	reLogPrefix = regexp.MustCompile(`^(?:\([^)]*\) )?(?:INFO|WARNING|DEBUG|ERROR)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[^\]]*\] ?`)
	reANSI      = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	reDashes    = regexp.MustCompile(`^-{3,}(?:\s+-{3,})+\s*$`)
	reGap       = regexp.MustCompile(`\s{2,}`)
	reFooter    = regexp.MustCompile(`^Self (\S+) time total:\s*(\S+)`)
)

// tableCols are the column positions a table's header names.
type tableCols struct {
	spans                             [][2]int // rune offsets of each column
	selfCPU, cpuTotal, selfDev, calls int
	device                            string // "CUDA" (or the device the header names)
}

// tableRow is one parsed data row.
type tableRow struct {
	name                      string
	selfCPU, cpuTotal, selfDv float64
	res                       float64 // rounding of selfDv as printed (µs)
	calls                     int
}

// parsedTable is one table of a file: its rows and its footer total.
type parsedTable struct {
	cols     tableCols
	rows     []tableRow
	devTotal float64 // "Self CUDA time total", -1 if absent
	totalRes float64 // half a unit of the footer's last printed digit (µs)
	bad      int     // rows that did not parse
}

// ParseTable reads a torch.profiler key_averages() table, as vLLM writes it
// to profiler_out_<rank>.txt, prints it, or logs it row by row, and returns
// the summary of its device kernels. When the input holds several tables
// (several stops in one log) the last one counts.
//
// Device kernels are the rows with no CPU time and some device time; the
// aten:: operators that launched them are left out, as are GPU-side user
// annotations (a record_function name that also has a CPU row, or a row
// longer than the whole device time). The footer's "Self CUDA time total"
// is the total; rows the table cut (row_limit) count as "other".
func ParseTable(r io.Reader) (*phases.ProfileSummary, error) {
	return parseTable(r, TopN)
}

func parseTable(r io.Reader, top int) (*phases.ProfileSummary, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var tables []*parsedTable
	var cur *parsedTable
	state := 0 // 0: looking for a dash line; 1: want header; 2: want dash after header; 3: rows; 4: footer
	var dash string
	lineNo := 0
	for {
		line, err := readLine(br)
		if line == "" && err != nil {
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("profiler table: %w", err)
		}
		lineNo++
		line = cleanLine(line)
		isDash := reDashes.MatchString(line)
		switch state {
		case 0, 4:
			if state == 4 {
				if m := reFooter.FindStringSubmatch(strings.TrimSpace(line)); m != nil && m[1] != "CPU" {
					if v, ok := parseDur(m[2]); ok {
						cur.devTotal, cur.totalRes = v, durRes(m[2])
					}
					continue
				}
			}
			if isDash {
				dash, state = line, 1
			}
		case 1:
			cols, ok := parseHeader(dash, line)
			if !ok {
				state = 0
				if isDash {
					dash, state = line, 1
				}
				continue
			}
			cur = &parsedTable{cols: cols, devTotal: -1}
			tables = append(tables, cur)
			state = 2
		case 2:
			state = 3
			if !isDash {
				state = 0
			}
		case 3:
			if isDash {
				state = 4
				continue
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			row, ok := parseRow(cur.cols, line)
			if !ok {
				cur.bad++
				continue
			}
			cur.rows = append(cur.rows, row)
		}
	}
	var t *parsedTable
	for i := len(tables) - 1; i >= 0; i-- {
		if len(tables[i].rows) > 0 {
			t = tables[i]
			break
		}
	}
	if t == nil {
		if len(tables) > 0 {
			return nil, fmt.Errorf("profiler table: the table has no rows (the profile covered no work: send requests between start_profile and stop_profile)")
		}
		return nil, fmt.Errorf("profiler table: no key_averages table found (want a header with Name, Self CPU, Self CUDA and # of Calls between dashed lines)")
	}
	return t.summary(top), nil
}

func (t *parsedTable) summary(top int) *phases.ProfileSummary {
	cpuNames := map[string]bool{}
	for _, r := range t.rows {
		if r.selfCPU > 0 || r.cpuTotal > 0 {
			cpuNames[r.name] = true
		}
	}
	agg := newKernelAgg()
	annotations, kernelRows := 0, 0
	slack := t.totalRes // printed values are rounded: so much can differ without a row missing
	for _, r := range t.rows {
		if r.selfCPU > 0 || r.cpuTotal > 0 || r.selfDv <= 0 {
			continue
		}
		if cpuNames[r.name] || (t.devTotal >= 0 && r.selfDv > t.devTotal*1.0001) {
			annotations++
			continue
		}
		agg.add(r.name, r.selfDv, r.calls)
		kernelRows++
		slack += r.res
	}
	total := t.devTotal
	if total < 0 || total-agg.sum() <= slack {
		total = 0 // the rows are the whole device time
	}
	src := fmt.Sprintf("key_averages table: %d device-kernel rows of %d", kernelRows, len(t.rows))
	if kernelRows != len(agg.order) {
		src += fmt.Sprintf(", %d distinct names (the table cuts long names)", len(agg.order))
	}
	s := agg.summary(src, total, top)
	if t.devTotal < 0 {
		s.Notes = append(s.Notes, "the table has no \"Self "+t.cols.device+" time total\" footer: the total is the sum of the kernel rows")
	}
	if s.UnlistedUs > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%.1f µs of device time is in rows the table cut (row_limit); counted as other", s.UnlistedUs))
	}
	if annotations > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d GPU-side annotation rows (record_function ranges) left out", annotations))
	}
	if t.bad > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d rows could not be read and were skipped", t.bad))
	}
	return s
}

// readLine reads one line without its end, skipping the part of a line past
// maxLine. It treats \r\n and \n as line ends.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(b) < maxLine {
			b = append(b, chunk...)
		}
		if err != nil {
			return string(b), err
		}
		if !isPrefix {
			if len(b) > maxLine {
				b = b[:0]
			}
			return string(b), nil
		}
	}
}

func cleanLine(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = reANSI.ReplaceAllString(s, "")
	}
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		s = s[i+1:]
	}
	return reLogPrefix.ReplaceAllString(s, "")
}

// parseHeader reads the header line's column names at the spans of the
// dashed line above it.
func parseHeader(dash, header string) (tableCols, bool) {
	c := tableCols{selfCPU: -1, cpuTotal: -1, selfDev: -1, calls: -1}
	dr := []rune(dash)
	for i := 0; i < len(dr); {
		if dr[i] != '-' {
			i++
			continue
		}
		j := i
		for j < len(dr) && dr[j] == '-' {
			j++
		}
		c.spans = append(c.spans, [2]int{i, j})
		i = j
	}
	// Header cells can be wider than their dashes ("CUDA time avg" over 12
	// dashes), so read them as the runs of text between 2+ spaces.
	names := reGap.Split(strings.TrimSpace(header), -1)
	if len(names) != len(c.spans) {
		return c, false
	}
	for i, name := range names {
		switch {
		case name == "Self CPU":
			c.selfCPU = i
		case name == "CPU total":
			c.cpuTotal = i
		case name == "# of Calls":
			c.calls = i
		case strings.HasPrefix(name, "Self ") && !strings.HasSuffix(name, "%") && !strings.Contains(name, "Mem") && c.selfDev < 0:
			c.selfDev = i
			c.device = strings.TrimPrefix(name, "Self ")
		}
	}
	ok := len(c.spans) > 1 && names[0] == "Name" &&
		c.selfCPU > 0 && c.cpuTotal > 0 && c.selfDev > 0 && c.calls > 0
	return c, ok
}

func sliceRunes(r []rune, from, to int) string {
	if from >= len(r) {
		return ""
	}
	if to > len(r) {
		to = len(r)
	}
	return string(r[from:to])
}

// parseRow reads a data row by the header's column spans; when a value
// does not sit in its span (a name longer than its column), it falls back
// to reading the numeric columns from the right.
func parseRow(c tableCols, line string) (tableRow, bool) {
	lr := []rune(line)
	cell := func(i int) string {
		end := c.spans[i][1]
		if i+1 < len(c.spans) {
			end = c.spans[i+1][0]
		}
		return strings.TrimSpace(sliceRunes(lr, c.spans[i][0], end))
	}
	row, ok := rowFrom(c, cell)
	if ok {
		row.name = strings.TrimSpace(sliceRunes(lr, 0, c.spans[0][1]))
		if row.name != "" {
			return row, true
		}
	}
	// Fallback: the last len(spans)-1 fields are the value columns.
	f := strings.Fields(line)
	n := len(c.spans) - 1
	if len(f) <= n {
		return tableRow{}, false
	}
	vals := f[len(f)-n:]
	row, ok = rowFrom(c, func(i int) string { return vals[i-1] })
	if !ok {
		return tableRow{}, false
	}
	row.name = strings.Join(f[:len(f)-n], " ")
	return row, true
}

func rowFrom(c tableCols, cell func(int) string) (tableRow, bool) {
	var r tableRow
	var ok bool
	if r.selfCPU, ok = parseDur(cell(c.selfCPU)); !ok {
		return r, false
	}
	if r.cpuTotal, ok = parseDur(cell(c.cpuTotal)); !ok {
		return r, false
	}
	if r.selfDv, ok = parseDur(cell(c.selfDev)); !ok {
		return r, false
	}
	r.res = durRes(cell(c.selfDev))
	n, err := strconv.Atoi(strings.ReplaceAll(cell(c.calls), ",", ""))
	if err != nil || n < 0 {
		return r, false
	}
	r.calls = n
	return r, true
}

// parseDur reads a profiler time ("12.5us", "3.989ms", "67.233s", "0") into
// microseconds.
func parseDur(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "us"):
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "µs"):
		s = strings.TrimSuffix(s, "µs")
	case strings.HasSuffix(s, "ns"):
		s, mult = s[:len(s)-2], 1e-3
	case strings.HasSuffix(s, "ms"):
		s, mult = s[:len(s)-2], 1e3
	case strings.HasSuffix(s, "s"):
		s, mult = s[:len(s)-1], 1e6
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v != v || v > 1e18 {
		return 0, false
	}
	return v * mult, true
}

// durRes is half a unit of the last digit of a printed profiler time, in
// µs: "1.901s" → 500, "12.5us" → 0.05.
func durRes(s string) float64 {
	s = strings.TrimSpace(s)
	unit := 1.0
	switch {
	case strings.HasSuffix(s, "ms"):
		unit, s = 1e3, s[:len(s)-2]
	case strings.HasSuffix(s, "us"), strings.HasSuffix(s, "ns"):
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "µs"):
		s = strings.TrimSuffix(s, "µs")
	case strings.HasSuffix(s, "s"):
		unit, s = 1e6, s[:len(s)-1]
	}
	dec := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		dec = len(s) - i - 1
	}
	res := unit / 2
	for ; dec > 0; dec-- {
		res /= 10
	}
	return res
}
