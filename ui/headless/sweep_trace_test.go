package headless

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases/defaultstest"
	"github.com/profdeck/profdeck/phases/macro"
)

// The sweep's header gives a trace's implied prefix reuse only when its
// format has hash ids: BurstGPT's CSV has none, so none is claimed.
func TestWorkloadTextOfTraces(t *testing.T) {
	for _, c := range []struct{ format, file, want string }{
		{macro.TraceMooncake, "../../phases/macro/testdata/trace_mooncake.jsonl", "its hash ids imply 83.4% prefix reuse"},
		{macro.TraceBurstGPT, "../../phases/macro/testdata/trace_burstgpt.csv", "(19 requests over 4.6s, 3.9 req/s; no hash ids, so no prefix reuse known)"},
	} {
		cfg := macro.Config{URL: "http://127.0.0.1:1", Dataset: c.format, DatasetFile: c.file, TraceSpeed: 1}
		defaultstest.Fill(&cfg, defaultstest.Macro)
		if err := macro.LoadWorkload(&cfg); err != nil {
			t.Fatal(err)
		}
		if got := workloadText(cfg); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q lacks %q", c.format, got, c.want)
		}
	}
}
