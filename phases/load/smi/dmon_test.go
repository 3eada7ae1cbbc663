package smi

import (
	"math"
	"os"
	"strings"
	"testing"
)

// The public dmon captures: columns are mapped by the latest header, "-"
// is unknown (NaN), GPM NVLink columns are read, a program's own line in
// between is skipped.
func TestDmonFixture(t *testing.T) {
	rows := dmonFile(t, "testdata/nvidia-smi-07-dmon-variants.txt")
	if len(rows) != 4+5+3+1+2 {
		t.Fatalf("%d rows", len(rows))
	}
	first := rows[0]
	if first.PowerW != 86 || first.SMPct != 30 || first.SMClockMHz != 1710 || !math.IsNaN(first.FBMiB) || !math.IsNaN(first.PCIeRxMBs) {
		t.Errorf("block 1 row 0 = %+v", first)
	}
	if r := rows[5]; r.Index != 1 || r.FBMiB != 4 || r.TempC != 28 {
		t.Errorf("block 2 row 1 = %+v", r)
	}
	if r := rows[12]; !math.IsNaN(r.MemClockMHz) || r.SMClockMHz != 208 {
		t.Errorf("GB10 row = %+v", r)
	}
	gpm0, gpm1 := rows[13], rows[14]
	if !math.IsNaN(gpm0.NVLinkRxMBs) || gpm1.NVLinkRxMBs != 0 || gpm1.NVLinkTxMBs != 0 || gpm1.Index != 1 {
		t.Errorf("GPM rows = %+v / %+v", gpm0, gpm1)
	}
}

// Driver 580's -s pucvmet columns, with tviol as a flag and the GPM NVLink
// metrics.
func TestDmonPucvmet(t *testing.T) {
	text := `# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk  pviol  tviol     fb   bar1   ccpm  sbecc  dbecc    pci  rxpci  txpci      nvlrx      nvltx
# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz      %   bool     MB     MB     MB   errs   errs   errs   MB/s   MB/s  GPM:MiB/s  GPM:MiB/s
    0    612     61     70     99     41      0      0      0      0   3201   1755     37      1 120517      5      0      0      0      0    310    295      40960      40100
`
	got := dmonRows(text)
	if len(got) != 1 {
		t.Fatalf("%d rows", len(got))
	}
	r := got[0]
	if r.PowerW != 612 || r.SMClockMHz != 1755 || r.PowerViolPct != 37 || r.ThermalViolPct != 100 || r.FBMiB != 120517 ||
		r.PCIeRxMBs != 310 || r.PCIeTxMBs != 295 || r.NVLinkRxMBs != 40960 || r.NVLinkTxMBs != 40100 {
		t.Fatalf("row = %+v", r)
	}
	if g := Parse(text, nil); len(g) != 1 || *g[0].PowerW != 612 || *g[0].MemoryUsedMiB != 120517 {
		t.Fatalf("Parse = %+v", g)
	}
}

func TestNVLinkStatus(t *testing.T) {
	text := "GPU 0: NVIDIA H200 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: 26.562 GB/s\n\t Link 2: <inactive>\n" +
		"GPU 1: NVIDIA H200 (UUID: GPU-2)\nGPU 2: NVIDIA H200 (UUID: GPU-3)\n\t Link 0: N/A\n"
	got := NVLinkStatus(text)
	if len(got[0]) != 2 || got[0][1] != 26.562 || len(got[1]) != 0 || len(got[2]) != 0 {
		t.Fatalf("got %v", got)
	}
}

func FuzzDmon(f *testing.F) {
	b, _ := os.ReadFile("testdata/nvidia-smi-07-dmon-variants.txt")
	f.Add(string(b))
	f.Add("# gpu pwr\n# Idx W\n0 12\n1 -\n")
	f.Add("# Time gpu pviol tviol\n# HH:MM:SS Idx % bool\n12:00:00 0 3 1\n")
	f.Add("# gpu pwr sm\n# Idx W %\n0 1e308 250\n1 inf nan\n")
	f.Fuzz(func(t *testing.T, s string) {
		var d Dmon
		for _, l := range strings.Split(s, "\n") {
			r, ok := d.Line(l)
			if ok && (r.Index < 0 || r.PowerW < 0 || r.NVLinkTxMBs < 0) {
				t.Fatalf("row %+v from %q", r, l)
			}
			// Every value kept is a possible reading: finite, 0 to its bound.
			for _, v := range []float64{r.PowerW, r.SMPct, r.MemPct, r.SMClockMHz, r.MemClockMHz, r.PowerViolPct, r.ThermalViolPct,
				r.FBMiB, r.TempC, r.PCIeRxMBs, r.PCIeTxMBs, r.NVLinkRxMBs, r.NVLinkTxMBs} {
				if ok && !math.IsNaN(v) && (math.IsInf(v, 0) || v < 0 || v > 50_000_000) {
					t.Fatalf("value %g kept from %q", v, l)
				}
			}
		}
		for gpu, links := range NVLinkStatus(s) {
			if gpu < 0 || len(links) > 64 {
				t.Fatalf("gpu %d links %v", gpu, links)
			}
		}
	})
}

// Driver 580 on an H200 without NVLink, as captured on one: -s pucvmet
// (tviol a flag), the GPM NVLink columns reading "-" on the first rounds,
// and nvlink -s printing nothing.
func TestDmonH200Driver580(t *testing.T) {
	rows := dmonFile(t, "testdata/nvidia-smi-10-h200-580-dmon-pucvmet.txt")
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[0]
	if r.PowerW != 77 || r.SMClockMHz != 345 || r.MemClockMHz != 3201 || r.PowerViolPct != 0 || r.ThermalViolPct != 0 || r.PCIeRxMBs != 0 || !math.IsNaN(r.NVLinkRxMBs) {
		t.Fatalf("row 0 = %+v", r)
	}
	if g := rows[3]; !math.IsNaN(g.NVLinkRxMBs) || !math.IsNaN(g.NVLinkTxMBs) || g.TempC != 38 {
		t.Fatalf("GPM row = %+v", g)
	}
	if links := NVLinkStatus(""); len(links) != 0 {
		t.Fatalf("links %v", links)
	}
}

// dmonRows reads every data row of text with one Dmon.
func dmonRows(text string) []DmonRow {
	var d Dmon
	var rows []DmonRow
	for _, line := range strings.Split(text, "\n") {
		if r, ok := d.Line(line); ok {
			rows = append(rows, r)
		}
	}
	return rows
}

func dmonFile(t *testing.T, path string) []DmonRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dmonRows(string(b))
}

// A value that is no GPU's reading (1e308 W, an SM 250% busy, inf, a
// negative power) is dropped with a warning, once per column: it reads
// unknown, never an infinite mean.
func TestDmonDropsImpossibleValuesWithAWarning(t *testing.T) {
	var d Dmon
	d.Line("# gpu pwr sm pclk")
	d.Line("# Idx W % MHz")
	r, ok := d.Line("0 1e308 250 1980")
	if !ok || !math.IsNaN(r.PowerW) || !math.IsNaN(r.SMPct) || r.SMClockMHz != 1980 {
		t.Fatalf("row %+v", r)
	}
	w := d.Warnings()
	if len(w) != 2 || !strings.Contains(w[0], `pwr "1e308" is not a possible reading`) {
		t.Fatalf("warnings %q", w)
	}
	for _, l := range []string{"1 inf 50 1980", "2 -7 50 1980", "3 1e400 50 1980"} {
		if r, _ := d.Line(l); !math.IsNaN(r.PowerW) {
			t.Fatalf("%q: power %g", l, r.PowerW)
		}
	}
	if w := d.Warnings(); len(w) != 0 || d.Dropped()["pwr"] != 4 {
		t.Fatalf("warnings again %q, dropped %v", w, d.Dropped())
	}
	if r, _ := d.Line("0 - 50 1980"); !math.IsNaN(r.PowerW) || d.Dropped()["pwr"] != 4 {
		t.Fatalf("a \"-\" counted as dropped: %v", d.Dropped())
	}
}
