package vllmlog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// FuzzParser feeds arbitrary bytes in two chunks: the parser must not panic,
// and every record must carry a valid kind and a rank of -1 or more.
func FuzzParser(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err == nil {
			f.Add(b, len(b)/2)
		}
	}
	f.Add([]byte("(Worker_TP0 pid=1) \r\n\rLoading safetensors checkpoint shards: 1% Completed | 1/2 [00:01<?, ?s/it]"), 5)
	f.Add([]byte("#033[1;36m(VllmWorker rank=0 pid=1)#033[0;0m ^[[0m\x1b[0m"), 3)
	f.Add([]byte("Aug 15 18:15:59 h vllm[1]: [SERVER] (Worker pid=2) (Worker_DP0_TP6_EP6 pid=2) ERROR 03-25 06:14:02 [x.py:1] NPU function error: AclrtSynchronizeStreamWithTimeout"), 40)
	f.Add([]byte("svc-1  | Loading safetensors checkpoint shards:  93% Completed | 28/30 [00:14<00:00,  2.38it/s] (VllmWorkerProcess pid=4) INFO 10-28 11:14:51 model_runner.py:1067] Loading model weights took 65.7407 GB INFO 10-28 11:14:52 x.py:1] y"), 60)
	f.Add([]byte("2026-05-08 11:47:02.257 [Error] (Process) (EngineCore pid=2651) torch.OutOfMemoryError: HIP out of memory"), 10)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		if cut < 0 || cut > len(b) {
			cut = len(b) / 2
		}
		p := New()
		s := NewSummary()
		recs := append(p.Write(b[:cut]), p.Write(b[cut:])...)
		recs = append(recs, p.Flush()...)
		for _, r := range recs {
			if r.Kind < KindOther || int(r.Kind) >= len(kindNames) || r.Rank < -1 {
				t.Fatalf("bad record %+v", r)
			}
			if r.Bar != nil && (r.Bar.Done < 0 || r.Bar.Total < 0) {
				t.Fatalf("bad bar %+v", r.Bar)
			}
			s.Add(r)
		}
		if s.State == "" || phases.StageIndex(s.Stage) < 0 {
			t.Fatalf("bad summary state %q stage %q", s.State, s.Stage)
		}
	})
}
