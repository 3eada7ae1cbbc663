package fleet

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote"
)

// clockCmd prints the host's clock in nanoseconds since the epoch, as
// the agent reads it (onhost.ClockSkewEnv included).
const clockCmd = "echo $(( $(date +%s%N) + ${" + onhost.ClockSkewEnv + ":-0} ))"

// HostProbe reads h's clock over its connection, one command per probe.
func HostProbe(ctx context.Context, h remote.Host) Probe {
	return func() (time.Time, time.Time, time.Time, error) {
		var text string
		t0 := time.Now()
		err := h.Run(ctx, clockCmd, nil, func(l remote.Line) {
			if l.Stream == remote.Stdout && text == "" {
				text = strings.TrimSpace(l.Text)
			}
		})
		t1 := time.Now()
		if err != nil {
			return t0, t0, t1, fmt.Errorf("%s: clock: %w", h.Name(), err)
		}
		ns, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return t0, t0, t1, fmt.Errorf("%s: clock: not nanoseconds: %q", h.Name(), firstN(text, 40))
		}
		return t0, time.Unix(0, ns), t1, nil
	}
}

func firstN(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
