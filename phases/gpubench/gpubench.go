// Package gpubench is what the micro and nccl GPU benchmarks share: the
// decode-step plan they time, built from a model spec resolved on the host,
// and the comma-separated integer lists their scripts take.
package gpubench

import (
	"context"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/units"
	"github.com/profdeck/profdeck/remote"
)

// IntList is a comma-separated list of batch sizes (a flag.Value).
type IntList []int

// String writes the list back comma-separated (flag.Value).
func (l *IntList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// MaxBatch bounds a batch size or token count the benchmarks take: a GEMM
// of 2^20 rows at a model's widths already fills tens of GiB.
const MaxBatch = 1 << 20

// Set parses "1,8,64" (each 1 to MaxBatch, none twice).
func (l *IntList) Set(v string) error {
	out, err := units.ParseInts(v, 1, MaxBatch)
	if err != nil {
		return err
	}
	*l = out
	return nil
}

// Plan resolves the model spec (a preset, a local config.json, or one on
// the host; h may be nil for the first two) and builds its decode-step
// plan.
func Plan(ctx context.Context, h remote.Host, spec string, opt model.Options) (model.Plan, error) {
	cfg, err := model.Resolve(ctx, h, spec)
	if err != nil {
		return model.Plan{}, err
	}
	return model.Build(cfg, opt)
}
