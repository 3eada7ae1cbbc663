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
// of stdin before it is the operator gone.
func awaitStart(ctx context.Context, rd *bufio.Reader, o *wireOut) error {
	for {
		line, err := readLine(rd)
		if err != nil {
			return fmt.Errorf("%s: waiting for the start: %w", AgentCommand, err)
		}
		var d down
		if json.Unmarshal(line, &d) == nil && d.Op == opStart {
			return startAt(ctx, d.At, o)
		}
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
