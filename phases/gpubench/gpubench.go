// Package gpubench is what the micro and nccl GPU benchmarks share: the
// decode-step plan they time, built from a model spec resolved on the host,
// and the comma-separated integer lists their scripts take.
package gpubench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/remote"
)

// IntList is a comma-separated list of positive integers.
type IntList []int

// String writes the list back comma-separated (flag.Value).
func (l *IntList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// Set parses "1,8,64".
func (l *IntList) Set(v string) error {
	out, err := ParseInts(v)
	if err != nil {
		return err
	}
	*l = out
	return nil
}

// ParseInts parses a comma-separated list of positive integers.
func ParseInts(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
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
