// Package smi reads nvidia-smi output: the --query-gpu CSV (with or without
// header and units, looped with -l/-lms), the default table, `dmon` and
// `-L`. Values nvidia-smi cannot give ([N/A], [Not Supported], "-") are
// unknown (nil), never zero. The parsers never fail on unknown lines.
package smi

import (
	"bufio"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MaxInput is the most text of nvidia-smi output read from one file (a
// looped capture can grow without end); a reader says when it cut one.
// MaxLine is the longest line kept: no line nvidia-smi prints is near it.
const (
	MaxInput = 32 << 20
	MaxLine  = 64 << 10
)

// ReadText reads nvidia-smi output for Parse in bounded memory: at most
// MaxInput bytes (cut says there was more), without lines longer than
// MaxLine (dropped counts them).
func ReadText(r io.Reader) (text string, cut bool, dropped int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var sb strings.Builder
	var line []byte
	for {
		line = line[:0]
		long := false
		var rerr error
		for {
			var chunk []byte
			chunk, rerr = br.ReadSlice('\n')
			if !long && len(line)+len(chunk) <= MaxLine {
				line = append(line, chunk...)
			} else {
				long, line = true, line[:0]
			}
			if rerr != bufio.ErrBufferFull {
				break
			}
		}
		switch {
		case long:
			dropped++
		case sb.Len()+len(line) > MaxInput:
			return sb.String(), true, dropped, nil
		default:
			sb.Write(line)
		}
		if rerr == io.EOF {
			return sb.String(), false, dropped, nil
		}
		if rerr != nil {
			return sb.String(), false, dropped, rerr
		}
	}
}

// QueryCommand is the poll the load phase runs once a second.
const QueryCommand = "nvidia-smi --query-gpu=index,name,memory.used,memory.total,utilization.gpu,power.draw --format=csv,noheader,nounits"

// QueryFields are the columns of QueryCommand, in order. Rows of the first
// five alone (the poll before power.draw was added) are read too.
var QueryFields = []string{"index", "name", "memory.used", "memory.total", "utilization.gpu", "power.draw"}

// InfoCommand asks every GPU's name, driver and memory once, for the
// system information; ParseInfo reads it.
const InfoCommand = "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader,nounits"

// GPU is one GPU's reading.
type GPU struct {
	Index          int      `json:"index"`
	Name           string   `json:"name"`
	Driver         string   `json:"driver,omitempty"` // InfoCommand's driver_version
	MemoryUsedMiB  *float64 `json:"memory_used_mib"`
	MemoryTotalMiB *float64 `json:"memory_total_mib"`
	UtilizationPct *float64 `json:"utilization_pct"`
	PowerW         *float64 `json:"power_w,omitempty"`
}

// ParseQuery parses the noheader,nounits CSV of QueryCommand. Lines that do
// not have its six fields (or the first five) are skipped.
func ParseQuery(text string) []GPU {
	var out []GPU
	for _, line := range strings.Split(text, "\n") {
		f := splitCSV(line)
		if len(f) != len(QueryFields) && len(f) != len(QueryFields)-1 {
			continue
		}
		if g, ok := fromFields(QueryFields[:len(f)], f, -1); ok {
			out = append(out, g)
		}
	}
	return out
}

// ParseInfo parses the noheader,nounits CSV of InfoCommand, one GPU a line
// in order (Index is the line's position). A name with a comma is kept
// whole (the last two fields are the driver and the memory); headers and
// lines of other output are skipped.
func ParseInfo(text string) []GPU {
	var out []GPU
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 3 {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		name := strings.Join(f[:len(f)-2], ", ")
		driver, mem := f[len(f)-2], f[len(f)-1]
		if name == "" || strings.HasPrefix(name, "name") || strings.Contains(driver, " ") {
			continue // a header, or not this query's output
		}
		out = append(out, GPU{Index: len(out), Name: name, Driver: driver, MemoryTotalMiB: number(mem)})
	}
	return out
}

// splitCSV splits an nvidia-smi CSV line on ", " (names contain spaces but
// no commas).
func splitCSV(line string) []string {
	line = strings.TrimRight(strings.TrimSpace(line), ",")
	if line == "" {
		return nil
	}
	parts := strings.Split(line, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

var numRe = regexp.MustCompile(`^(-?[\d.]+)\s*(MiB|MB|GiB|%|W)?$`)

// number parses "78942", "78942 MiB", "100 %"; unknown markers give nil,
// and so does a negative value (no memory, power or utilisation is below
// 0: such a reading is unknown, not carried on).
func number(s string) *float64 {
	s = strings.TrimSpace(s)
	m := numRe.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v < 0 {
		return nil
	}
	if m[2] == "GiB" {
		v *= 1024
	}
	return &v
}

// fromFields builds a GPU from named CSV fields; order is the row's position
// when there is no index column.
func fromFields(names, vals []string, order int) (GPU, bool) {
	g := GPU{Index: order}
	hasIndex := false
	for i, n := range names {
		if i >= len(vals) {
			break
		}
		v := vals[i]
		switch n {
		case "index":
			idx, err := strconv.Atoi(v)
			if err != nil {
				return g, false
			}
			g.Index, hasIndex = idx, true
		case "name", "gpu_name":
			g.Name = v
		case "memory.used":
			g.MemoryUsedMiB = number(v)
		case "memory.total":
			g.MemoryTotalMiB = number(v)
		case "utilization.gpu":
			g.UtilizationPct = number(v)
		case "power.draw":
			g.PowerW = number(v)
		}
	}
	return g, hasIndex || order >= 0
}

// merge folds readings into a set keyed by index: a later reading replaces
// an earlier one, but an unknown value does not erase a known one from the
// same file (a `-L` line after a CSV row).
type set struct {
	byIndex map[int]*GPU
}

func (s *set) add(g GPU) {
	if s.byIndex == nil {
		s.byIndex = map[int]*GPU{}
	}
	old := s.byIndex[g.Index]
	if old == nil {
		c := g
		s.byIndex[g.Index] = &c
		return
	}
	if g.Name != "" {
		old.Name = g.Name
	}
	if g.MemoryUsedMiB != nil {
		old.MemoryUsedMiB = g.MemoryUsedMiB
	}
	if g.MemoryTotalMiB != nil {
		old.MemoryTotalMiB = g.MemoryTotalMiB
	}
	if g.UtilizationPct != nil {
		old.UtilizationPct = g.UtilizationPct
	}
	if g.PowerW != nil {
		old.PowerW = g.PowerW
	}
}

func (s *set) list() []GPU {
	out := make([]GPU, 0, len(s.byIndex))
	for _, g := range s.byIndex {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}
