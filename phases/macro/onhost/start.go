package onhost

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ClockSkewEnv shifts the clock the agent and its host's clock probe read
// by that many nanoseconds: a host whose clock differs from the
// operator's, as tests make one.
const ClockSkewEnv = "PROFDECK_CLOCK_SKEW_NS"

// hostNow is this host's clock, as the operator's clock probe reads it.
func hostNow() time.Time {
	skew, _ := strconv.ParseInt(os.Getenv(ClockSkewEnv), 10, 64)
	return time.Now().Add(time.Duration(skew))
}

// awaitStart reads the start operation and waits for its time; the end
// of stdin before it is the operator gone. The steering that came before
// the start (a pause, a stop) is returned, for the sweep once it exists.
func awaitStart(ctx context.Context, rd *bufio.Reader, o *wireOut) ([]down, error) {
	var early []down
	for {
		line, err := readLine(rd)
		if err != nil {
			return nil, fmt.Errorf("%s: waiting for the start: %w", AgentCommand, err)
		}
		var d down
		if json.Unmarshal(line, &d) != nil {
			continue
		}
		if d.Op == opStart {
			return early, startAt(ctx, d.At, o)
		}
		early = append(early, d)
	}
}

// startAt waits until the host's clock reads at (ns since the epoch; 0:
// no wait) and says when it started.
func startAt(ctx context.Context, at int64, o *wireOut) error {
	if at == 0 {
		return nil
	}
	if d := time.Unix(0, at).Sub(hostNow()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil // the sweep sees it cancelled and says so
		case <-t.C:
		}
	}
	return o.send(up{Started: hostNow().UnixNano()})
}
