package macro

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
)

// emuCounter reads one counter from an emulator's /metrics.
func emuCounter(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			if err == nil {
				return v
			}
		}
	}
	t.Fatalf("no %s on /metrics", name)
	return 0
}

// TestReplayHitRateMatchesImpliedReuse replays the sample Mooncake (512-
// token blocks) and Bailian (16-token blocks, short prompts, turns that
// extend their conversation's) traces at 20× on the simulated deployment:
// the hit rate its /metrics report is within 2 points of the reuse the
// trace's hash ids imply.
func TestReplayHitRateMatchesImpliedReuse(t *testing.T) {
	for _, c := range []struct{ format, file string }{
		{TraceMooncake, "testdata/trace_mooncake.jsonl"},
		{TraceBailian, "testdata/trace_bailian.jsonl"},
	} {
		hit, implied := replayOnEmu(t, c.format, c.file)
		if implied < 0.3 || math.Abs(hit-implied) > 0.02 {
			t.Errorf("%s: server hit rate %.3f, trace implies %.3f", c.format, hit, implied)
		}
		t.Logf("%s: server hit rate %.3f, trace implies %.3f", c.format, hit, implied)
	}
}

// replayOnEmu replays a trace at 20× on a fresh emulator: the hit rate
// its counters say, and the reuse the trace implies.
func replayOnEmu(t *testing.T, format, file string) (hit, implied float64) {
	t.Helper()
	_, url := emutest.Start(t, vllmemu.Config{StepTime: time.Millisecond, CoarseTiming: true})
	tr, err := ReadTrace(format, file)
	if err != nil {
		t.Fatal(err)
	}
	reqs := TraceWindow{Speed: 20}.Cut(tr.Requests)
	prompts := make([]string, len(reqs))
	gen := newTracePrompts(tr.BlockSize, 1)
	for i, r := range reqs {
		prompts[i] = gen.prompt(i, r)
	}
	errs := make(chan error, len(reqs))
	replayTrace(context.Background(), reqs, func(i int, _ time.Time) {
		body, _ := json.Marshal(map[string]any{"model": "test/model", "prompt": prompts[i], "max_tokens": reqs[i].OutputLen})
		resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		errs <- err
	})
	for range reqs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	hit = emuCounter(t, url, "vllm:prefix_cache_hits_total") / emuCounter(t, url, "vllm:prefix_cache_queries_total")
	return hit, ImpliedReuse(reqs, tr.BlockSize, CacheBlock)
}
