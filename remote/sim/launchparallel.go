package sim

import (
	"regexp"
	"time"

	"github.com/profdeck/profdeck/remote/sim/vllmemu"
)

var (
	reTP = regexp.MustCompile(`(?:--tensor-parallel-size|-tp)[= ]+(\d+)`)
	reDP = regexp.MustCompile(`(?:--data-parallel-size|-dp)[= ]+(\d+)`)
	reEP = regexp.MustCompile(`--enable-expert-parallel\b`)
)

// epCommFactor is what expert parallelism leaves of a step's
// communication: the half of the all-reduces that follow the MoE layers
// become all-to-alls moving half the bytes (each token to its experts'
// ranks and back, against a ring all-reduce's 2(n−1)/n), so ½ + ½ × ½.
const epCommFactor = 0.75

// Parallel is how a launch splits the model: its tensor-parallel size
// against the step model's, its data-parallel replicas and expert
// parallelism.
type Parallel struct {
	BaseTP, TP, DP int
	EP             bool
}

// ParallelOf reads a launch's --tensor-parallel-size (default: the step
// model's TP), --data-parallel-size (default 1) and
// --enable-expert-parallel.
func ParallelOf(cmd string, baseTP int) Parallel {
	p := Parallel{BaseTP: max(baseTP, 1), TP: max(baseTP, 1), DP: 1, EP: reEP.MatchString(cmd)}
	if n, ok := flagInt(reTP, cmd); ok {
		p.TP = n
	}
	if n, ok := flagInt(reDP, cmd); ok {
		p.DP = n
	}
	return p
}

// changes reports whether the launch serves otherwise than the step model.
func (p Parallel) changes() bool { return p.TP != p.BaseTP || p.DP > 1 || p.EP }

// StepMicros is one step of the launch in µs, from the step model's parts
// at the base TP: each of DP replicas runs ⌈batch/DP⌉ requests and
// prefills its share of the prompt tokens; within one, the device work
// other than communication scales by BaseTP/TP, the all-reduces are the
// step model's at TP (none at TP 1), × 0.75 with expert parallelism, and
// the host's gap is the replica's.
func (p Parallel) StepMicros(m *StepModel, batch, prefill int) float64 {
	b := (max(batch, 1) + p.DP - 1) / p.DP
	base := m.Parts(b)
	comm := m.AtTP(p.TP).Parts(b).AllReduce
	if p.EP {
		comm *= epCommFactor
	}
	shard := float64(p.BaseTP) / float64(p.TP)
	pre := m.PrefillMicros((prefill + p.DP - 1) / p.DP)
	return base.HostGap + (base.Device()-base.AllReduce)*shard + comm + pre*shard
}

// AtTP is the same model served at tp (itself when tp is its TP).
func (m *StepModel) AtTP(tp int) *StepModel {
	if tp == m.tp {
		return m
	}
	o := &StepModel{cfg: m.cfg, ok: m.ok, tp: max(tp, 1), nodes: m.nodes, byM: map[int]StepParts{}}
	o.perTok = o.prefillPerToken()
	return o
}

// launchEmulator is the emulator's configuration for a launch: its
// parallel layout over the step model (when the deployment steps with
// it), then its scheduling flags; --max-num-seqs is each DP replica's.
func launchEmulator(cmd string, base vllmemu.Config, m *StepModel, stepsWithModel bool) vllmemu.Config {
	c := base
	p := Parallel{BaseTP: 1, TP: 1, DP: 1}
	if m != nil {
		p = ParallelOf(cmd, m.TP())
	}
	if stepsWithModel && p.changes() {
		c.StepFunc = func(batch, prefill int) time.Duration {
			return time.Duration(p.StepMicros(m, batch, prefill) * float64(time.Microsecond))
		}
	}
	c = LaunchConfig(cmd, c)
	if p.DP > 1 {
		seats := c.MaxNumSeqs
		if seats <= 0 {
			seats = vllmemu.DefaultMaxNumSeqs
		}
		c.MaxNumSeqs = seats * p.DP
	}
	return c
}
