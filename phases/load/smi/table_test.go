package smi

import (
	"os"
	"testing"
)

// The processes, MIG state and MIG devices of real tables, at their widths:
// truncated memory figures are unknown, not their visible digits.
func TestReadTable(t *testing.T) {
	read := func(name string) TableInfo {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return ReadTable(string(b))
	}
	busy := read("nvidia-smi-02-h200x8-580-busy-truncated-procs.txt")
	if len(busy.Processes) != 9 || busy.MIG == nil || *busy.MIG {
		t.Fatalf("busy: %d processes, mig %v", len(busy.Processes), busy.MIG)
	}
	p0, p1 := busy.Processes[0], busy.Processes[1]
	if p0.GPU != 0 || p0.PID != 3446290 || p0.Type != "C" || p0.Name != "python" || p0.MemoryMiB == nil || *p0.MemoryMiB != 3932 || p0.GI != nil {
		t.Errorf("first process %+v", p0)
	}
	if p1.Name != "ray::ray_math_ppl" || p1.MemoryMiB != nil {
		t.Errorf("a cut memory figure must be unknown: %+v", p1)
	}
	if none := read("nvidia-smi-03-h100x8-535-table.txt"); len(none.Processes) != 0 || none.MIG == nil || *none.MIG {
		t.Errorf("no processes: %+v", none)
	}
	mig := ReadTable(`| MIG devices:                                                                |
|==================+======================+===========+=======================|
|  1    3   0   0  |  14366MiB / 19968MiB | 28      0 |  2   0    1    0    0 |
|                  |      4MiB / 32767MiB |           |                       |
| Processes:                                                                  |
|    1    3    0      12345      C   python3                        14000MiB |`)
	if mig.MIG == nil || !*mig.MIG || len(mig.MIGDevices) != 1 || *mig.MIGDevices[0].MemoryUsedMiB != 14366 {
		t.Fatalf("mig: %+v", mig)
	}
	if p := mig.Processes; len(p) != 1 || p[0].GI == nil || *p[0].GI != 3 || *p[0].CI != 0 || p[0].PID != 12345 {
		t.Errorf("MIG process %+v", p)
	}
}

// ReadTable never panics on arbitrary text.
func FuzzReadTable(f *testing.F) {
	f.Add("| Processes: |\n|    0   N/A  N/A   1   C   x   1MiB |\n| MIG devices: |\n|  1 3 0 0 | 1MiB / 2MiB |")
	f.Fuzz(func(t *testing.T, s string) { ReadTable(s) })
}
