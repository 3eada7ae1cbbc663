package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// A probe whose agent clock runs 3 s ahead, reading it at a random point of
// each round trip: the smallest round trip bounds the error best.
func TestMeasureKeepsTheSmallestRoundTrip(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	rtts := []time.Duration{40 * time.Millisecond, 2 * time.Millisecond, 30 * time.Millisecond}
	i := 0
	p := func() (time.Time, time.Time, time.Time, error) {
		t0 := base.Add(time.Duration(i) * time.Second)
		rtt := rtts[i%len(rtts)]
		i++
		read := t0.Add(rtt / 4) // the agent read its clock early in the trip
		return t0, read.Add(3 * time.Second), t0.Add(rtt), nil
	}
	o, err := Measure(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	if o.RTT != 2*time.Millisecond || o.Uncertainty != time.Millisecond {
		t.Fatalf("kept rtt %v ± %v", o.RTT, o.Uncertainty)
	}
	if d := o.Offset - 3*time.Second; d < -o.Uncertainty || d > o.Uncertainty {
		t.Fatalf("offset %v, want 3s ± %v", o.Offset, o.Uncertainty)
	}
	at := base.Add(time.Hour)
	if got := o.ToCoordinator(at.Add(o.Offset)); !got.Equal(at) {
		t.Fatalf("mapped %v, want %v", got, at)
	}
	if _, err := Measure(func() (time.Time, time.Time, time.Time, error) {
		return base, base, base, errors.New("host gone")
	}, 2); err == nil || err.Error() != "host gone" {
		t.Fatalf("err %v", err)
	}
}

// Two and four agents, each its own sshd (own port, own host alias): each
// agent's offset is measured over its own connection. They share this
// machine's clock, so each offset is zero within its stated uncertainty.
func TestClockOffsetOverSSH(t *testing.T) {
	sshtest.Require(t)
	for _, n := range []int{2, 4} {
		for i := range n {
			h := dial(t, sshtest.Options{})
			o, err := Measure(HostProbe(context.Background(), h), 5)
			if err != nil {
				t.Fatal(err)
			}
			slack := o.Uncertainty + time.Millisecond // date's fork after the read
			if o.Offset < -slack || o.Offset > slack || o.RTT <= 0 {
				t.Errorf("%d agents, agent %d (%s): offset %v ± %v", n, i, h.Name(), o.Offset, o.Uncertainty)
			}
		}
	}
}
