package report

import (
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

// A replayed trace's level shows the reuse its hash ids imply beside the
// server's prefix-cache hit rate; another level shows the hit rate alone.
func TestServerLevelsShowTraceReuse(t *testing.T) {
	hit, implied := 0.834, 0.836
	n := &nb{}
	n.serverLevels([]phases.LevelResult{
		{Rate: 14.1, Server: &phases.ServerLevel{Available: true, PrefixCacheHitRate: &hit},
			Schedule: &phases.Schedule{TraceReuse: &implied}},
		{Concurrency: 4, Server: &phases.ServerLevel{Available: true, PrefixCacheHitRate: &hit}},
	})
	out := n.b.String()
	if !strings.Contains(out, "| 83.4% (the trace implies 83.6%) |") || strings.Count(out, "the trace implies") != 1 {
		t.Fatalf("notebook:\n%s", out)
	}
}
