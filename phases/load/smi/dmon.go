package smi

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DmonCommand is the GPU sampler's long-running poll: power, temperatures,
// utilisation, clocks, power and thermal violations, memory, ECC and PCIe
// throughput, once every interval seconds. gpm adds the Hopper-and-later GPM
// NVLink receive and transmit rates (metrics 60 and 61, MiB/s).
func DmonCommand(interval int, gpm bool) string {
	cmd := "nvidia-smi dmon -s pucvmet -d " + strconv.Itoa(max(1, interval))
	if gpm {
		cmd += " --gpm-metrics 60,61"
	}
	return cmd
}

// DmonRow is one GPU's row of `nvidia-smi dmon`. Values nvidia-smi cannot
// give ("-", "N/A") are NaN, never zero.
type DmonRow struct {
	Index int
	// PowerW is the board power; SMPct the share of time any SM was busy;
	// MemPct the memory controller's; SMClockMHz the SM (processor) clock.
	PowerW, SMPct, MemPct, SMClockMHz, MemClockMHz float64
	// PowerViolPct and ThermalViolPct are the shares of the interval the
	// clocks were held down by the power cap or by temperature (a column
	// whose unit is "bool" reads 0 or 100).
	PowerViolPct, ThermalViolPct float64
	FBMiB, TempC                 float64
	// PCIe and NVLink throughput, MB/s as dmon prints them (GPM: MiB/s).
	PCIeRxMBs, PCIeTxMBs, NVLinkRxMBs, NVLinkTxMBs float64
}

// Dmon reads `nvidia-smi dmon` output one line at a time, mapping columns
// by the latest header (the column set depends on -s, the driver and
// --gpm-metrics). It never fails: lines it cannot read are skipped.
type Dmon struct {
	cols  []string
	units []string // the units line under the names, when it came
	// warned holds the columns an impossible value was dropped from (said
	// once each); news the warnings not yet taken.
	warned map[string]int
	news   []string
}

// dmonMax bounds each column: a reading above it (a power of 1e308 W, an
// SM busy 250% of the time) is no GPU's, and is dropped.
var dmonMax = map[string]float64{
	"pwr": 10_000, "sm": 100, "mem": 100, "pclk": 20_000, "mclk": 50_000,
	"pviol": 100, "tviol": 100, "fb": 1 << 24, "gtemp": 250,
	"rxpci": 1e7, "txpci": 1e7, "nvlrx": 1e7, "nvltx": 1e7,
}

// Warnings returns the warnings since the last call: a column whose value
// was not a possible reading (dropped: the figure reads unknown), said once
// per column.
func (d *Dmon) Warnings() []string {
	w := d.news
	d.news = nil
	return w
}

// Dropped is how many values were dropped as impossible, by column.
func (d *Dmon) Dropped() map[string]int { return d.warned }

// drop says, once per column, that an impossible value was dropped.
func (d *Dmon) drop(col, text string, gpu int) {
	if d.warned == nil {
		d.warned = map[string]int{}
	}
	d.warned[col]++
	if d.warned[col] == 1 && len(d.warned) <= len(dmonMax) {
		if len(text) > 32 {
			text = text[:32] + "…"
		}
		d.news = append(d.news, fmt.Sprintf("nvidia-smi dmon: GPU %d %s %q is not a possible reading (0 to %g): dropped, read as unknown (later ones of that column too)",
			gpu, col, strings.ToValidUTF8(text, "?"), dmonMax[col]))
	}
}

// Columns is the latest header's column names (nil before any header).
func (d *Dmon) Columns() []string { return d.cols }

// Line reads one line; ok is true when it was a GPU's data row.
func (d *Dmon) Line(line string) (DmonRow, bool) {
	t := strings.TrimSpace(line)
	if t == "" {
		return DmonRow{}, false
	}
	if rest, ok := strings.CutPrefix(t, "#"); ok {
		f := strings.Fields(rest)
		switch {
		case len(f) < 2 || len(f) > 64:
		case indexOf(f, "gpu") >= 0:
			d.cols, d.units = append(d.cols[:0], f...), d.units[:0]
		case indexOf(f, "Idx") >= 0 && len(f) == len(d.cols):
			d.units = append(d.units[:0], f...)
		}
		return DmonRow{}, false
	}
	gi := indexOf(d.cols, "gpu")
	f := strings.Fields(t)
	if gi < 0 || len(f) != len(d.cols) {
		return DmonRow{}, false
	}
	idx, err := strconv.Atoi(f[gi])
	if err != nil || idx < 0 || idx > 4096 {
		return DmonRow{}, false
	}
	nan := math.NaN()
	r := DmonRow{Index: idx, PowerW: nan, SMPct: nan, MemPct: nan, SMClockMHz: nan, MemClockMHz: nan,
		PowerViolPct: nan, ThermalViolPct: nan, FBMiB: nan, TempC: nan,
		PCIeRxMBs: nan, PCIeTxMBs: nan, NVLinkRxMBs: nan, NVLinkTxMBs: nan}
	for i, c := range d.cols {
		if p := dmonField(&r, c); p != nil {
			*p = dmonNumber(f[i])
			if i < len(d.units) && d.units[i] == "bool" {
				*p *= 100 // a flag (tviol on some drivers): held down or not
			}
			if *p > dmonMax[c] || (math.IsNaN(*p) && numeric(f[i])) {
				*p = math.NaN()
				d.drop(c, f[i], idx)
			}
		}
	}
	return r, true
}

// dmonField is where column c goes in r (nil: a column not kept).
func dmonField(r *DmonRow, c string) *float64 {
	switch c {
	case "pwr":
		return &r.PowerW
	case "sm":
		return &r.SMPct
	case "mem":
		return &r.MemPct
	case "pclk":
		return &r.SMClockMHz
	case "mclk":
		return &r.MemClockMHz
	case "pviol":
		return &r.PowerViolPct
	case "tviol":
		return &r.ThermalViolPct
	case "fb":
		return &r.FBMiB
	case "gtemp":
		return &r.TempC
	case "rxpci":
		return &r.PCIeRxMBs
	case "txpci":
		return &r.PCIeTxMBs
	case "nvlrx":
		return &r.NVLinkRxMBs
	case "nvltx":
		return &r.NVLinkTxMBs
	}
	return nil
}

func dmonNumber(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
		return math.NaN()
	}
	return v
}

// numeric is whether s reads as a number (a "-" or "N/A" does not: those
// are unknown, not wrong).
func numeric(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// NVLinkStatus reads `nvidia-smi nvlink -s`: each GPU's active links and
// their speeds in GB/s (per direction). A GPU without NVLink has no entry,
// or an entry with no active link.
func NVLinkStatus(text string) map[int][]float64 {
	out := map[int][]float64{}
	gpu := -1
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if m := listRe.FindStringSubmatch(t); m != nil {
			gpu, _ = strconv.Atoi(m[1])
			continue
		}
		rest, ok := strings.CutPrefix(t, "Link ")
		if !ok || gpu < 0 || gpu > 4096 || len(out[gpu]) >= 64 {
			continue
		}
		_, speed, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		f := strings.Fields(speed)
		if len(f) == 2 && f[1] == "GB/s" {
			if v := dmonNumber(f[0]); !math.IsNaN(v) {
				out[gpu] = append(out[gpu], v)
			}
		}
	}
	return out
}
