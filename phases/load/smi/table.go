package smi

import (
	"regexp"
	"strconv"
	"strings"
)

// TableInfo is what the default nvidia-smi table says besides each GPU's
// reading: whether MIG is on, the MIG devices and the processes. Columns
// are found by their content, not their position, so any table width reads
// (drivers 410 to 580, narrow terminals, pasted copies with spaces
// collapsed).
type TableInfo struct {
	// MIG is true when a GPU's "MIG M." column says Enabled or the table
	// lists MIG devices; false when every GPU says Disabled or N/A; nil
	// when the table does not say.
	MIG        *bool       `json:"mig"`
	MIGDevices []MIGDevice `json:"mig_devices"`
	Processes  []Process   `json:"processes"`
}

// MIGDevice is one row of the "MIG devices" section.
type MIGDevice struct {
	GPU            int      `json:"gpu"`
	GI             int      `json:"gi"`
	CI             int      `json:"ci"`
	Dev            int      `json:"mig_dev"`
	MemoryUsedMiB  *float64 `json:"memory_used_mib"`
	MemoryTotalMiB *float64 `json:"memory_total_mib"`
}

// Process is one row of the "Processes" section; GI and CI are nil
// outside MIG, MemoryMiB nil when nvidia-smi prints N/A.
type Process struct {
	GPU       int      `json:"gpu"`
	GI        *int     `json:"gi,omitempty"`
	CI        *int     `json:"ci,omitempty"`
	PID       int      `json:"pid"`
	Type      string   `json:"type"`
	Name      string   `json:"name"`
	MemoryMiB *float64 `json:"memory_mib"`
}

var (
	migRowRe  = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$`)
	procTypes = map[string]bool{"C": true, "G": true, "C+G": true, "M": true, "M+C": true}
)

// maxRows bounds the MIG devices and processes kept from one text.
const maxRows = 4096

// ReadTable reads the MIG state, MIG devices and processes of a default
// nvidia-smi table (other outputs give an empty TableInfo).
func ReadTable(text string) TableInfo {
	var out TableInfo
	section := ""
	migSeen, migOn, migOff := false, false, false
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r", ""), "\n") {
		t := strings.TrimSpace(ansiblePfx.ReplaceAllString(line, ""))
		if !strings.HasPrefix(t, "|") {
			continue
		}
		switch {
		case strings.Contains(t, "MIG devices:"):
			section, migSeen = "mig", true
			continue
		case strings.Contains(t, "Processes:"):
			section = "procs"
			continue
		}
		cells := strings.Split(strings.Trim(t, "|"), "|")
		last := strings.TrimSpace(cells[len(cells)-1])
		if section == "" && len(cells) >= 3 && strings.TrimSpace(cells[0]) == "" {
			// The third row of a GPU: its last column is "MIG M.".
			switch last {
			case "Enabled":
				migOn = true
			case "Disabled", "N/A":
				migOff = true
			}
		}
		switch section {
		case "mig":
			if m := migRowRe.FindStringSubmatch(cells[0]); m != nil && len(cells) > 1 && len(out.MIGDevices) < maxRows {
				d := MIGDevice{GPU: atoi(m[1]), GI: atoi(m[2]), CI: atoi(m[3]), Dev: atoi(m[4])}
				if mm := tableMemRe.FindStringSubmatch(cells[1]); mm != nil {
					d.MemoryUsedMiB, d.MemoryTotalMiB = number(mm[1]), number(mm[2])
				}
				out.MIGDevices = append(out.MIGDevices, d)
			}
		case "procs":
			if p, ok := processRow(cells[0]); ok && len(out.Processes) < maxRows {
				out.Processes = append(out.Processes, p)
			}
		}
	}
	switch {
	case migOn || migSeen || len(out.MIGDevices) > 0:
		v := true
		out.MIG = &v
	case migOff:
		v := false
		out.MIG = &v
	}
	if out.MIGDevices == nil {
		out.MIGDevices = []MIGDevice{}
	}
	if out.Processes == nil {
		out.Processes = []Process{}
	}
	return out
}

// processRow reads "GPU [GI CI] PID TYPE NAME MEMORY" by its tokens: the
// type is C, G, C+G, M or M+C, the PID is just before it, the memory last.
func processRow(cell string) (Process, bool) {
	f := strings.Fields(cell)
	if len(f) < 5 {
		return Process{}, false
	}
	gpu, err := strconv.Atoi(f[0])
	if err != nil {
		return Process{}, false
	}
	ti := -1
	for i := 2; i < len(f)-1; i++ {
		if procTypes[f[i]] {
			if _, err := strconv.Atoi(f[i-1]); err == nil {
				ti = i
				break
			}
		}
	}
	if ti < 0 {
		return Process{}, false
	}
	p := Process{GPU: gpu, PID: atoi(f[ti-1]), Type: f[ti], Name: strings.Join(f[ti+1:len(f)-1], " ")}
	if ti-1 == 3 {
		if gi, err := strconv.Atoi(f[1]); err == nil {
			p.GI = &gi
		}
		if ci, err := strconv.Atoi(f[2]); err == nil {
			p.CI = &ci
		}
	}
	if mem := f[len(f)-1]; !strings.HasSuffix(mem, "...") {
		// A narrow table cuts the figure ("13020..."): unknown, not 13020.
		p.MemoryMiB = number(mem)
	}
	return p, true
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
