package fleet

import (
	"errors"
	"time"
)

// Offset is an agent's clock minus the coordinator's, as estimated over
// its connection, with its uncertainty (half the round trip it came from).
type Offset struct {
	Offset      time.Duration
	Uncertainty time.Duration
	RTT         time.Duration
}

// Probe asks an agent its clock once: the coordinator's send time t0, the
// agent's reading, and the coordinator's receive time t1.
type Probe func() (t0, agent, t1 time.Time, err error)

// Measure takes n probes and keeps the one with the smallest round trip
// (NTP's minimum filter): the agent's clock is read between t0 and t1, so
// offset = agent − (t0+t1)/2 within ± RTT/2.
func Measure(p Probe, n int) (Offset, error) {
	var best Offset
	found := false
	var lastErr error
	for range n {
		t0, a, t1, err := p()
		if err != nil {
			lastErr = err
			continue
		}
		rtt := t1.Sub(t0)
		if rtt < 0 {
			continue
		}
		if !found || rtt < best.RTT {
			mid := t0.Add(rtt / 2)
			best = Offset{Offset: a.Sub(mid), Uncertainty: rtt / 2, RTT: rtt}
			found = true
		}
	}
	if !found {
		if lastErr == nil {
			lastErr = errors.New("no probe came back")
		}
		return Offset{}, lastErr
	}
	return best, nil
}

// ToCoordinator maps a time on the agent's clock to the coordinator's.
func (o Offset) ToCoordinator(t time.Time) time.Time { return t.Add(-o.Offset) }

// ToAgent maps a time on the coordinator's clock to the agent's.
func (o Offset) ToAgent(t time.Time) time.Time { return t.Add(o.Offset) }
