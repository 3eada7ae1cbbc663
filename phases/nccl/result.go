package nccl

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/model"
	"github.com/profdeck/profdeck/phases/units"
)

// Result is everything one NCCL run reported, gathered from its events.
type Result struct {
	Env      *phases.GPUEnv        `json:"env,omitempty"`
	Bursts   []phases.NCCLBurst    `json:"bursts"`
	AllToAll []phases.NCCLAllToAll `json:"alltoall"`
	Cliff    *phases.NCCLCliff     `json:"cliff,omitempty"`
	// Link is the GPUs' interconnect and its peak per direction.
	Link   *phases.NCCLLink     `json:"link,omitempty"`
	Errors []phases.ScriptError `json:"errors,omitempty"`
	// Warnings say each figure the script left out, and why (the burst
	// between GEMMs not slower than the GEMMs alone, …).
	Warnings []string `json:"warnings,omitempty"`
	// None is set when the step has no collectives (one GPU).
	None     *phases.NCCLNone `json:"no_collectives,omitempty"`
	Progress phases.Progress  `json:"-"`
}

// Add folds one event into the result; events of other kinds are ignored.
func (r *Result) Add(ev phases.Event) {
	switch d := ev.Data.(type) {
	case phases.GPUEnv:
		if ev.Kind == phases.KindNCCLEnv {
			r.Env = &d
		}
	case phases.NCCLLink:
		l := d
		r.Link = &l
	case phases.NCCLBurst:
		r.Bursts = append(r.Bursts, d)
		sort.SliceStable(r.Bursts, func(i, j int) bool { return r.Bursts[i].M < r.Bursts[j].M })
	case phases.NCCLAllToAll:
		r.AllToAll = append(r.AllToAll, d)
		sort.SliceStable(r.AllToAll, func(i, j int) bool { return r.AllToAll[i].Tokens < r.AllToAll[j].Tokens })
	case phases.NCCLCliff:
		r.Cliff = &d
	case phases.NCCLNone:
		r.None = &d
	case phases.NCCLWarning:
		r.Warnings = append(r.Warnings, d.Text)
	case phases.ScriptError:
		if ev.Kind == phases.KindNCCLError {
			r.Errors = append(r.Errors, d)
		}
	case phases.Progress:
		if ev.Kind == phases.KindNCCLProgress {
			r.Progress = d
		}
	}
}

// Empty reports whether the run gave no result at all: no burst, no
// All-to-All, and no word that the step has no collectives (a launcher
// that ran nothing, such as `true`).
func (r *Result) Empty() bool { return len(r.Bursts) == 0 && len(r.AllToAll) == 0 && r.None == nil }

// WriteTables writes the burst and All-to-All tables as plain text.
func (r *Result) WriteTables(w io.Writer) {
	if r.None != nil {
		fmt.Fprintln(w, "No collectives: "+r.None.Reason)
	}
	if e := r.Env; e != nil {
		fmt.Fprintf(w, "GPU %s ×%d (torch %s, CUDA %s, NCCL %s)", e.GPU, e.NProc, e.Torch, e.CUDA, e.NCCL)
		if len(e.NCCLEnv) > 0 {
			keys := make([]string, 0, len(e.NCCLEnv))
			for k := range e.NCCLEnv {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(w, " %s=%s", k, e.NCCLEnv[k])
			}
		}
		fmt.Fprintln(w)
	}
	if len(r.Bursts) > 0 {
		fmt.Fprintln(w, "\nAll-reduce burst of one decode step ([M, hidden] BF16, max over ranks)")
		fmt.Fprintf(w, "%-5s %10s %6s %10s %9s %10s %9s %12s\n", "M", "bytes/op", "count", "eager ms", "µs/op", "graph ms", "µs/op", "between ms")
		for _, b := range r.Bursts {
			g1, g2, in := GraphCells(b, "-")
			fmt.Fprintf(w, "%-5d %10s %6d %10.3f %9.1f %10s %9s %12s\n", b.M, units.Bytes(b.Bytes), b.Count, b.TotalMs, b.PerOpUs, g1, g2, in)
		}
		fmt.Fprintln(w, "between: all-reduces after GEMMs that evict L2, in a CUDA graph, less the GEMMs")
	}
	if r.Env != nil && r.Env.NProc == 1 {
		fmt.Fprintln(w, "one rank: NCCL moves no data; the times are the launch cost of each call")
	}
	if len(r.AllToAll) > 0 {
		fmt.Fprintln(w, "\nAll-to-All, EP dispatch (BF16, per rank; busbw = algbw×(n−1)/n)")
		fmt.Fprintf(w, "%-6s %11s %10s %11s %11s\n", "T/GPU", "bytes", "µs", "algbw GB/s", "busbw GB/s")
		for _, a := range r.AllToAll {
			mark := ""
			if r.Cliff != nil && r.Cliff.Tokens == a.Tokens {
				mark = "  ◀ cliff"
			}
			off := ""
			if a.Nodes > 1 {
				off = "  off node " + units.Bytes(a.OffNodeBytes)
			}
			fmt.Fprintf(w, "%-6d %11s %10.1f %11.2f %11.2f%s%s\n", a.Tokens, units.Bytes(a.Bytes), a.Us, a.AlgBW, a.BusBW, off, mark)
		}
		writeOffNode(w, r.AllToAll)
		if r.Cliff != nil {
			fmt.Fprintf(w, "latency cliff at T=%d: %.1f → %.1f µs (%.1f×)\n", r.Cliff.Tokens, r.Cliff.FromUs, r.Cliff.ToUs, r.Cliff.ToUs/r.Cliff.FromUs)
		} else {
			fmt.Fprintln(w, "no latency cliff (no step more than doubles the latency)")
		}
	}
	for _, x := range r.Warnings {
		fmt.Fprintln(w, "warning:", x)
	}
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", ErrorText(e))
	}
}

// GraphCells are a burst's captured figures as table cells: the graph's
// ms and µs per op, and the burst between GEMMs in ms (absent where there
// is none; the warnings say why).
func GraphCells(b phases.NCCLBurst, absent string) (graphMs, graphPerOpUs, betweenMs string) {
	graphMs, graphPerOpUs, betweenMs = absent, absent, absent
	if b.GraphMs > 0 {
		graphMs, graphPerOpUs = fmt.Sprintf("%.3f", b.GraphMs), fmt.Sprintf("%.1f", b.GraphPerOpUs)
	}
	if b.InStepMs > 0 {
		betweenMs = fmt.Sprintf("%.3f", b.InStepMs)
	}
	return graphMs, graphPerOpUs, betweenMs
}

// ErrorText is a script error as one line: what failed (at which M, when
// the script says), then the error.
func ErrorText(e phases.ScriptError) string {
	what := e.What
	if e.Step > 0 {
		what = strings.TrimSpace(fmt.Sprintf("%s at M=%d", what, e.Step))
	}
	if what == "" {
		return e.Err
	}
	return what + ": " + e.Err
}

// Report is what `profdeck nccl --json` writes.
type Report struct {
	Host     string     `json:"host"`
	Torchrun string     `json:"torchrun"`
	NProc    int        `json:"nproc"`
	Plan     model.Plan `json:"plan"`
	Result
	Error string `json:"error,omitempty"`
}

// writeOffNode writes OffNodeText's line, when there is one.
func writeOffNode(w io.Writer, rows []phases.NCCLAllToAll) {
	if t := OffNodeText(rows); t != "" {
		fmt.Fprintln(w, t)
	}
}

// OffNodeText says, on several nodes, where the All-to-All's traffic
// leaves the node: the share of each rank's bytes bound for ranks on other
// nodes, which goes over the network, not NVLink. Empty on one node.
func OffNodeText(rows []phases.NCCLAllToAll) string {
	if len(rows) == 0 {
		return ""
	}
	a := rows[len(rows)-1]
	if a.Nodes < 2 || a.Bytes <= 0 {
		return ""
	}
	return fmt.Sprintf("traffic leaves the node: %d ranks on each of %d nodes, so %s of each rank's %s (%.0f%%) goes to the other nodes over the network at every step",
		a.NProc/a.Nodes, a.Nodes, units.Bytes(a.OffNodeBytes), units.Bytes(a.Bytes), 100*float64(a.OffNodeBytes)/float64(a.Bytes))
}

// NoEPText is why the All-to-All timed at n sizes is not shown for a
// deployment without expert parallelism, in the words the NCCL pane and the
// notebook both use.
func NoEPText(n int) string {
	return fmt.Sprintf("All-to-All: timed at %d sizes, not shown: this deployment runs without expert parallelism (model.ep: false), so its decode step sends no All-to-All.", n)
}
