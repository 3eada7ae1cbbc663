package fleet

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases/macro/onhost"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
	"github.com/profdeck/profdeck/remote/ssh/sshtest"
)

// startTolerance is how far apart two agents may start, on the
// coordinator's clock, once their offsets are applied.
const startTolerance = 150 * time.Millisecond

// Two agents whose clocks differ by 3 s (the second host's clock skewed)
// are each told the level's start in their own clock: their offsets are
// measured, and they start within startTolerance of each other.
func TestAgentsStartTogetherAcrossClocks(t *testing.T) {
	sshtest.Require(t)
	_, url := emutest.Start(t, vllmemu.Config{StepTime: 2 * time.Millisecond, StepPerSeq: 1})
	const skew = 3 * time.Second
	exe := profdeckBinary(t)
	var ms []Member
	for i, env := range [][]string{nil, {onhost.ClockSkewEnv + "=" + strconv.FormatInt(skew.Nanoseconds(), 10)}} {
		h := dial(t, sshtest.Options{Env: append(env, "XDG_CACHE_HOME="+t.TempDir())})
		ms = append(ms, Member{Name: "gen" + string(rune('1'+i)), Opt: onhost.Options{Host: h, Exe: exe}})
	}
	lv, err := RunClosed(context.Background(), levelConfig(url, 20), 4, ms)
	if err != nil {
		t.Fatal(err)
	}
	if lv.OK != 20 {
		t.Fatalf("ok %d: %s", lv.OK, lv.Note())
	}
	a, b := lv.Agents[0], lv.Agents[1]
	if d := b.Offset.Offset - a.Offset.Offset - skew; d.Abs() > 100*time.Millisecond {
		t.Errorf("offsets %v and %v: want %v apart", a.Offset.Offset, b.Offset.Offset, skew)
	}
	if !a.StartKnown || !b.StartKnown || lv.StartSpread > startTolerance {
		t.Errorf("starts %v (said %v) and %v (said %v): want within %v", a.Start, a.StartKnown, b.Start, b.StartKnown, startTolerance)
	}
	t.Logf("offsets %v ± %v, %v ± %v; starts %v, %v (spread %v)", a.Offset.Offset, a.Offset.Uncertainty,
		b.Offset.Offset, b.Offset.Uncertainty, a.Start, b.Start, lv.StartSpread)
}
