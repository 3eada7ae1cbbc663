package smi

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	tableGPURe  = regexp.MustCompile(`^\s*(\d+)\s+(.+?)\s+(On|Off|N/A)\s*$`)
	tableMemRe  = regexp.MustCompile(`^\s*(\S+?)\s*/\s*(\S+)\s*$`)
	tableUtilRe = regexp.MustCompile(`^\s*(\S+)\s`)
	listRe      = regexp.MustCompile(`^GPU (\d+): (.+?)(?: \(UUID: [^)]*\))?$`)
	timestampRe = regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d`)
	ansiblePfx  = regexp.MustCompile(`^\S+ \| [A-Z]+ \| rc=\d+ \| \((?:stdout|stderr)\) `)
	headerName  = regexp.MustCompile(`^([a-z_]+(?:\.[a-z_]+)*)(?: \[[^\]]*\])?$`)
)

// Parse reads any nvidia-smi output it recognises (default table, CSV with
// or without header and units, dmon, -L) and returns one reading per GPU:
// the last one in the file for looped output. Headerless CSV is read with
// fields (nil means QueryFields; a leading timestamp column is recognised by
// its shape).
func Parse(text string, fields []string) []GPU {
	p := parser{fields: fields, busOrder: map[string]int{}}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r", ""), "\n") {
		p.line(ansiblePfx.ReplaceAllString(line, ""))
	}
	return p.out.list()
}

type parser struct {
	fields   []string
	header   []string // CSV header names
	dmon     Dmon     // dmon columns, once a dmon header was read
	table    *GPU     // a table GPU row waiting for its memory row
	procs    bool     // inside the table's Processes section
	busOrder map[string]int
	out      set
}

func (p *parser) line(line string) {
	t := strings.TrimSpace(line)
	switch {
	case t == "":
		return
	case strings.HasPrefix(t, "#"):
		p.comment(t)
		return
	case strings.HasPrefix(t, "|") || strings.HasPrefix(t, "+"):
		p.tableLine(t)
		return
	}
	if m := listRe.FindStringSubmatch(t); m != nil {
		idx, _ := strconv.Atoi(m[1])
		p.out.add(GPU{Index: idx, Name: m[2]})
		return
	}
	if strings.Contains(t, ",") {
		p.csvLine(t)
		return
	}
	if p.dmon.cols != nil {
		p.dmonLine(t)
	}
}

func (p *parser) comment(t string) { p.dmon.Line(t) }

func (p *parser) tableLine(t string) {
	if strings.Contains(t, "Processes:") {
		p.procs = true
		return
	}
	if p.procs || strings.HasPrefix(t, "+") {
		if strings.HasPrefix(t, "+") && p.table != nil {
			p.table = nil
		}
		return
	}
	cells := strings.Split(strings.Trim(t, "|"), "|")
	if len(cells) < 3 {
		return
	}
	if m := tableGPURe.FindStringSubmatch(cells[0]); m != nil && strings.Contains(cells[1], ":") {
		idx, _ := strconv.Atoi(m[1])
		p.table = &GPU{Index: idx, Name: strings.TrimSpace(m[2])}
		return
	}
	if p.table == nil {
		return
	}
	// The row under a GPU row: memory "used / total" (either may read
	// N/A or "Not Supported") and utilisation.
	g := *p.table
	if m := tableMemRe.FindStringSubmatch(cells[1]); m != nil && strings.Contains(cells[1], "/") {
		g.MemoryUsedMiB = number(m[1])
		g.MemoryTotalMiB = number(m[2])
	}
	if u := tableUtilRe.FindStringSubmatch(strings.TrimSpace(cells[2]) + " "); u != nil {
		g.UtilizationPct = number(u[1])
	}
	p.out.add(g)
	p.table = nil
}

func (p *parser) csvLine(t string) {
	f := splitCSV(t)
	if isHeader(f) {
		p.header = make([]string, len(f))
		for i, v := range f {
			p.header[i] = headerName.FindStringSubmatch(v)[1]
		}
		return
	}
	names := p.header
	if names == nil || len(names) != len(f) {
		names = p.fields
		if names == nil {
			names = QueryFields
			if len(f) == len(QueryFields)-1 || len(f) == len(QueryFields) && timestampRe.MatchString(f[0]) {
				names = QueryFields[:len(QueryFields)-1]
			}
		}
		if len(f) > 0 && timestampRe.MatchString(f[0]) && len(names) == len(f)-1 {
			names = append([]string{"timestamp"}, names...)
		} else if len(f) > 0 && timestampRe.MatchString(f[0]) && len(f) == 5 {
			names = []string{"timestamp", "index", "memory.used", "memory.total", "utilization.gpu"}
		}
		if len(names) != len(f) {
			return
		}
	}
	order := -1
	if !contains(names, "index") {
		key := ""
		for i, n := range names {
			if n == "pci.bus_id" || n == "uuid" || n == "gpu_uuid" {
				key = f[i]
			}
		}
		o, ok := p.busOrder[key]
		if !ok {
			o = len(p.busOrder)
			p.busOrder[key] = o
		}
		order = o
	}
	if g, ok := fromFields(names, f, order); ok {
		p.out.add(g)
	}
}

func isHeader(f []string) bool {
	if len(f) == 0 {
		return false
	}
	for _, v := range f {
		if !headerName.MatchString(v) {
			return false
		}
	}
	return contains(f, "index") || contains(f, "name") || strings.Contains(strings.Join(f, ","), "memory.") ||
		contains(f, "timestamp") || contains(f, "pci.bus_id")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s || strings.HasPrefix(v, s+" [") {
			return true
		}
	}
	return false
}

func (p *parser) dmonLine(t string) {
	r, ok := p.dmon.Line(t)
	if !ok {
		return
	}
	g := GPU{Index: r.Index, MemoryUsedMiB: known(r.FBMiB), UtilizationPct: known(r.SMPct), PowerW: known(r.PowerW)}
	p.out.add(g)
}

// known is v, or nil when v is NaN (a value nvidia-smi could not give).
func known(v float64) *float64 {
	if v != v {
		return nil
	}
	return &v
}
