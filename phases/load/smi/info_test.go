package smi

import "testing"

// ParseInfo reads InfoCommand's lines in order, keeps a name with a comma
// whole, and skips headers and other output.
func TestParseInfo(t *testing.T) {
	out := "name, driver_version, memory.total [MiB]\nNVIDIA H200, 580.105.08, 143771\nNVIDIA GH200 480GB, Grace, 580.105.08, [N/A]\n\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
	gpus := ParseInfo(out)
	if len(gpus) != 2 {
		t.Fatalf("%d GPUs: %+v", len(gpus), gpus)
	}
	if g := gpus[0]; g.Index != 0 || g.Name != "NVIDIA H200" || g.Driver != "580.105.08" || g.MemoryTotalMiB == nil || *g.MemoryTotalMiB != 143771 {
		t.Errorf("first: %+v", g)
	}
	if g := gpus[1]; g.Index != 1 || g.Name != "NVIDIA GH200 480GB, Grace" || g.MemoryTotalMiB != nil {
		t.Errorf("second: %+v", g)
	}
}

func FuzzParseInfo(f *testing.F) {
	f.Add("NVIDIA H200, 580.105.08, 143771\n,,\n, , ,\nname,")
	f.Fuzz(func(t *testing.T, s string) {
		for i, g := range ParseInfo(s) {
			if g.Index != i || g.Name == "" {
				t.Fatalf("%+v", g)
			}
		}
	})
}
