package profile

import (
	"math"
	"strings"
	"testing"
)

// The tp2 capture is a real two-GPU run (torchrun on two H200s, NCCL 2.28.9):
// its all-reduces are real ncclDevKernel launches, which must land in the
// communication category in the table and in the trace alike. Rank 0's
// all-reduce time includes waiting for rank 1, so communication dominates.
func TestRealTwoGPUCaptureHasCommunication(t *testing.T) {
	tab, err := ParseTable(open(t, "key_averages-tp2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(tab.TotalCUDAUs-489713) > 1 { // the footer prints whole µs
		t.Errorf("table total = %v µs, want the footer's 489,713", tab.TotalCUDAUs)
	}
	if math.Abs(tab.Categories[CatCommunication]-489009) > 1 {
		t.Errorf("communication = %v µs, want the 12 NCCL all-reduces' 489,009", tab.Categories[CatCommunication])
	}
	if tab.CommunicationShare < 0.99 {
		t.Errorf("communication share = %.4f, want above 0.99", tab.CommunicationShare)
	}
	if len(tab.Top) == 0 || !strings.HasPrefix(tab.Top[0].Name, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL") ||
		tab.Top[0].Calls != 12 || tab.Top[0].Category != CatCommunication {
		t.Errorf("top kernel = %+v, want the NCCL all-reduce, 12 calls, communication", tab.Top)
	}
	for _, k := range tab.Top {
		if strings.HasPrefix(k.Name, "nccl:") || k.Name == "record_param_comms" {
			t.Errorf("annotation %q counted as a kernel", k.Name)
		}
	}

	tr, err := ParseTrace(open(t, "trace-tp2.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if d := tr.Categories[CatCommunication] - tab.Categories[CatCommunication]; d > 1 || d < -1 {
		t.Errorf("trace communication %v µs vs table %v µs", tr.Categories[CatCommunication], tab.Categories[CatCommunication])
	}
	if tr.TotalCUDAUs < tab.TotalCUDAUs*0.999 || tr.TotalCUDAUs > tab.TotalCUDAUs*1.001 {
		t.Errorf("trace total %v µs vs table %v µs", tr.TotalCUDAUs, tab.TotalCUDAUs)
	}
}
