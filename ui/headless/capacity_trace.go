package headless

import (
	"fmt"

	"github.com/profdeck/profdeck/phases/macro"
)

// traceTraffic is the request rate of a trace's busiest minute (its mean
// when it spans less), said on stderr; a trace that cannot be read is bad
// input naming the file and line.
func traceTraffic(c *Command, path string) (float64, error) {
	format := macro.DetectTraceFormat(path)
	tr, err := macro.ReadTrace(format, path)
	if err != nil {
		return 0, &BadInputError{Err: fmt.Errorf("--trace %v", err)}
	}
	rate := macro.PeakRate(tr.Requests)
	if rate <= 0 {
		return 0, BadInput("--trace %s: its %d requests span no time; a rate needs two or more apart", path, len(tr.Requests))
	}
	fmt.Fprintf(c.Stderr, "capacity: the %s trace %s: %d requests, %.3g req/s in its busiest minute (the traffic planned for, unless the sweep replayed the trace at several speeds)\n",
		format, path, len(tr.Requests), rate)
	return rate, nil
}
