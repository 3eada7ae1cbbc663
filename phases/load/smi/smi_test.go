package smi

import (
	"os"
	"path/filepath"
	"testing"
)

type reading struct {
	index             int
	name              string
	used, total, util float64 // -1 = unknown
}

var fixtures = map[string]struct {
	count int
	check []reading
}{
	"nvidia-smi-01-h200x8-570-vllm-enginecore.txt":      {8, []reading{{0, "NVIDIA H200", 130215, 143771, 0}, {7, "NVIDIA H200", 0, 143771, 0}}},
	"nvidia-smi-02-h200x8-580-busy-truncated-procs.txt": {8, []reading{{1, "NVIDIA H200", 133201, 143771, 94}, {3, "NVIDIA H200", 12641, 143771, 100}}},
	"nvidia-smi-03-h100x8-535-table.txt":                {8, []reading{{5, "NVIDIA H100 80GB HBM3", 0, 81559, 0}}},
	"nvidia-smi-05-h200-query-csv-header-units-lms.txt": {2, []reading{{0, "NVIDIA H200", 20733, -1, 3}, {1, "NVIDIA H200", 9447, -1, 94}}},
	"nvidia-smi-07-dmon-variants.txt":                   {2, []reading{{1, "", 24, -1, 0}}},
	"nvidia-smi-08-h200-lms-memory-ramp.txt":            {1, []reading{{0, "", 619, 143771, 0}}},
	"nvidia-smi-09-h200-query-forms.txt":                {1, []reading{{0, "NVIDIA H200", 0, 143771, 0}}},
	"nvidia-smi-10-h200-580-dmon-pucvmet.txt":           {1, []reading{{0, "", 0, -1, 0}}},
}

func TestFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) != len(fixtures) {
		t.Errorf("%d files, %d table rows", len(files), len(fixtures))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			want, ok := fixtures[name]
			if !ok {
				t.Fatalf("no expectations for %s", name)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := Parse(string(b), nil)
			if len(got) != want.count {
				t.Fatalf("%d GPUs, want %d: %+v", len(got), want.count, got)
			}
			for _, w := range want.check {
				g := got[w.index]
				if g.Index != w.index || g.Name != w.name || val(g.MemoryUsedMiB) != w.used ||
					val(g.MemoryTotalMiB) != w.total || val(g.UtilizationPct) != w.util {
					t.Errorf("GPU %d = %+v (%v/%v/%v), want %+v", w.index, g, val(g.MemoryUsedMiB), val(g.MemoryTotalMiB), val(g.UtilizationPct), w)
				}
			}
		})
	}
}

func val(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// Values nvidia-smi cannot give are unknown, not zero.
func TestNotAvailable(t *testing.T) {
	text := "0, NVIDIA GB10, [N/A], [N/A], 5\n1, NVIDIA X, [Not Supported], 81559, [Not Supported]\n2, Old, N/A, N/A, N/A\n"
	got := ParseQuery(text)
	if len(got) != 3 {
		t.Fatalf("%d GPUs: %+v", len(got), got)
	}
	if got[0].MemoryUsedMiB != nil || got[0].MemoryTotalMiB != nil || val(got[0].UtilizationPct) != 5 {
		t.Errorf("GPU0 %+v", got[0])
	}
	if got[1].MemoryUsedMiB != nil || val(got[1].MemoryTotalMiB) != 81559 || got[1].UtilizationPct != nil {
		t.Errorf("GPU1 %+v", got[1])
	}
	if got[2].MemoryUsedMiB != nil || got[2].UtilizationPct != nil {
		t.Errorf("GPU2 %+v", got[2])
	}
	// Same through the general parser, with a header and units, and the
	// Ansible wrapper.
	text = "host | CHANGED | rc=0 | (stdout) index, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%]\n" +
		"host | CHANGED | rc=0 | (stdout) 0, NVIDIA GB10, [N/A], [N/A], 96 %\n"
	all := Parse(text, nil)
	if len(all) != 1 || all[0].MemoryUsedMiB != nil || val(all[0].UtilizationPct) != 96 || all[0].Name != "NVIDIA GB10" {
		t.Errorf("header form: %+v", all)
	}
	// A table whose memory reads N/A.
	table := "|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |\n" +
		"| N/A   35C    P8              4W /  N/A  | Not Supported          |      0%      Default |\n"
	tg := Parse(table, nil)
	if len(tg) != 1 || tg[0].MemoryUsedMiB != nil || tg[0].MemoryTotalMiB != nil || val(tg[0].UtilizationPct) != 0 || tg[0].Name != "NVIDIA GB10" {
		t.Errorf("table N/A: %+v", tg)
	}
}

func TestFieldsFlag(t *testing.T) {
	got := Parse("3, 1024, 2048\n", []string{"index", "memory.used", "memory.total"})
	if len(got) != 1 || got[0].Index != 3 || val(got[0].MemoryUsedMiB) != 1024 || val(got[0].MemoryTotalMiB) != 2048 || got[0].UtilizationPct != nil {
		t.Errorf("%+v", got)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("0, NVIDIA H200, [N/A], 143771, 0\n")
	f.Add("0, NVIDIA H200, -7, 143771, -3\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, g := range append(Parse(s, nil), ParseQuery(s)...) {
			for _, v := range []*float64{g.MemoryUsedMiB, g.MemoryTotalMiB, g.UtilizationPct} {
				if v != nil && (*v != *v || *v < 0) {
					t.Fatalf("NaN or negative in %+v", g)
				}
			}
		}
	})
}

// A negative reading (memory used -7 MiB) is unknown, not carried on.
func TestParseQueryNegativeIsUnknown(t *testing.T) {
	g := ParseQuery("0, NVIDIA H200, -7, 143771, -3\n")
	if len(g) != 1 || g[0].MemoryUsedMiB != nil || g[0].UtilizationPct != nil || *g[0].MemoryTotalMiB != 143771 {
		t.Fatalf("%+v", g)
	}
}
