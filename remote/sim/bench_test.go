package sim

import (
	"context"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote"
)

// BenchmarkNvidiaSMIQuery measures one simulated nvidia-smi CSV poll, the
// load phase's most frequent command.
func BenchmarkNvidiaSMIQuery(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Start(ctx, Options{LoadTime: time.Minute, AutoStart: true})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := d.Run(ctx, "nvidia-smi --query-gpu=index,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits", nil, func(remote.Line) {}); err != nil {
			b.Fatal(err)
		}
	}
}
