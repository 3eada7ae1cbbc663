package vllmlog

import "testing"

// Lines are classified by what they mean: a keyword inside an identifier
// (…WithTimeout) is not a timeout, a bar behind a wrapper is still a bar.
func TestClassifyByMeaning(t *testing.T) {
	cases := []struct {
		line    string
		kind    Kind
		failure string
		rank    int
	}{
		{"(VllmWorker TP1 pid=961) ERROR 09-07 01:11:09 [multiproc_executor.py:596] RuntimeError: operator():build/CMakeFiles/torch_npu.dir/compiler_depend.ts:47 NPU function error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 507048",
			KindFailure, FailDevice, 1},
		{"(VllmWorker TP1 pid=961) ERROR 09-07 01:11:09 [multiproc_executor.py:596]         rtStreamSynchronizeWithTimeout execute failed, reason=[fftsplus timeout]",
			KindOther, "", 1}, // an indented traceback body: neither a timeout nor a warning of its own
		{"ERROR 05-01 10:00:00 [core.py:1] concurrent.futures._base.TimeoutError", KindFailure, FailTimeout, -1},
		{"ERROR 05-01 10:00:00 [core.py:1] TimeoutError: RPC call to sample_tokens timed out.", KindFailure, FailTimeout, -1},
		{"torch.distributed.DistStoreError: Timed out waiting for 8 clients", KindFailure, FailTimeout, -1},
		{"ERROR 05-01 10:00:00 [x.py:1] RuntimeError: CUDA error: an illegal memory access was encountered", KindFailure, FailDevice, -1},
		{"[SERVER] Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:00<00:00,  1.62it/s]", KindShardBar, "", 0},  // rank 0 draws the bar
		{"launcher: Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:00<00:00,  1.62it/s]", KindShardBar, "", 0}, // rank 0 draws the bar
		{"Aug 15 18:16:20 gpu1 vllm[7405]: (Worker_TP3 pid=7512) INFO 08-15 18:16:20 [gpu_model_runner.py:1] Starting to load model x...", KindLoadStart, "", 3},
		{"vllm-1  | [SERVER] INFO 08-15 18:16:20 [kv_cache_utils.py:1] GPU KV cache size: 1,024 tokens", KindKVCache, "", -1},
		{"(Worker pid=17148) (Worker_DP0_TP6_EP6 pid=17148) ERROR 03-25 06:14:02 [multiproc_executor.py:880] WorkerProc hit an exception.", KindFailure, FailWorkerDied, 6},
		{"INFO 05-01 10:00:00 [x.py:1] request timeout set to 600 s", KindOther, "", -1},
	}
	for _, c := range cases {
		recs := New().Line(c.line)
		if len(recs) != 1 {
			t.Errorf("%q: %d records, want 1", c.line, len(recs))
			continue
		}
		r := recs[0]
		if r.Kind != c.kind || r.Failure != c.failure || r.Rank != c.rank {
			t.Errorf("%q:\n got kind %v failure %q rank %d, want %v %q %d", c.line, r.Kind, r.Failure, r.Rank, c.kind, c.failure, c.rank)
		}
	}
}

// A paste whose newlines were collapsed splits back into its records, and
// a header right after a process prefix stays with it.
func TestCollapsedPasteSplits(t *testing.T) {
	line := "Loading safetensors checkpoint shards:  93% Completed | 28/30 [00:14<00:00,  2.38it/s] (VllmWorkerProcess pid=479247) INFO 10-28 11:14:51 model_runner.py:1067] Loading model weights took 65.7407 GB Loading safetensors checkpoint shards: 100% Completed | 30/30 [00:15<00:00,  2.13it/s]"
	recs := New().Line(line)
	var kinds []Kind
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	if len(recs) != 3 || recs[0].Kind != KindShardBar || recs[1].Kind != KindModelLoaded || recs[1].PID != 479247 || recs[2].Kind != KindShardBar {
		t.Fatalf("records %v: %+v", kinds, recs)
	}
}
