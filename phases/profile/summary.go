package profile

import (
	"fmt"
	"math"
	"sort"

	"github.com/profdeck/profdeck/phases"
)

// TopN is how many kernels ParseTable and ParseTrace list (a capture
// lists Config.Top).
const TopN = 15

// kernelAgg accumulates device time per kernel name.
type kernelAgg struct {
	order []string
	byKey map[string]*phases.Kernel
	marks map[string]int // step annotations seen, by category and name
}

func newKernelAgg() *kernelAgg {
	return &kernelAgg{byKey: map[string]*phases.Kernel{}, marks: map[string]int{}}
}

// stepOrder lists the annotations vLLM's model runner records once per
// engine step, the most precise first: "gpu_model_runner: forward" (V1,
// 0.10 and later), "execute_model" (earlier runners and workers).
var stepOrder = []string{"gpu_model_runner: forward", "execute_model", "gpu_model_runner: preprocess"}

var stepMarkers = map[string]bool{}

func init() {
	for _, m := range stepOrder {
		stepMarkers[m] = true
	}
}

func (a *kernelAgg) mark(cat, name string) {
	if len(a.marks) < 16 {
		a.marks[cat+"\x00"+name]++
	} else if _, ok := a.marks[cat+"\x00"+name]; ok {
		a.marks[cat+"\x00"+name]++
	}
}

// steps counts the engine steps in the trace: the first step annotation
// vLLM records, on the CPU side (user_annotation) when present, else its
// GPU-side copy (gpu_user_annotation); 0 when the trace has none.
func (a *kernelAgg) steps() (int, string) {
	for _, m := range stepOrder {
		for _, cat := range []string{"user_annotation", "gpu_user_annotation"} {
			if n := a.marks[cat+"\x00"+m]; n > 0 {
				return n, fmt.Sprintf("counted in the trace: %d %q annotations (%s), one per engine step", n, m, cat)
			}
		}
	}
	return 0, ""
}

func (a *kernelAgg) add(name string, us float64, calls int) {
	k := a.byKey[name]
	if k == nil {
		k = &phases.Kernel{Name: name, Category: Category(name)}
		a.byKey[name] = k
		a.order = append(a.order, name)
	}
	k.SelfCUDAUs += us
	k.Calls += calls
}

func (a *kernelAgg) sum() float64 {
	s := 0.0
	for _, k := range a.byKey {
		s += k.SelfCUDAUs
	}
	return s
}

// summary builds the profile summary from the kernels. total is the device
// time total the profiler reported (0 when it reported none); time it counts
// beyond the listed kernels (rows a table cut) goes to "other". top is how
// many kernels to list.
func (a *kernelAgg) summary(source string, total float64, top int) *phases.ProfileSummary {
	s := &phases.ProfileSummary{Source: source, Categories: map[string]float64{}}
	for _, c := range Categories {
		s.Categories[c] = 0
	}
	all := make([]phases.Kernel, 0, len(a.order))
	listed := 0.0
	for _, n := range a.order {
		k := *a.byKey[n]
		k.SelfCUDAUs = round3(k.SelfCUDAUs)
		all = append(all, k)
		s.Categories[k.Category] += k.SelfCUDAUs
		listed += k.SelfCUDAUs
	}
	s.KernelCount = len(all)
	if total > listed*(1+1e-6) {
		s.UnlistedUs = round3(total - listed)
		s.Categories[CatOther] += s.UnlistedUs
	} else {
		total = listed
	}
	s.TotalCUDAUs = round3(total)
	for c, v := range s.Categories {
		s.Categories[c] = round3(v)
	}
	if total > 0 {
		s.CommunicationShare = s.Categories[CatCommunication] / total
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].SelfCUDAUs > all[j].SelfCUDAUs })
	if len(all) > top {
		all = all[:top]
	}
	s.Top = all
	s.TraceSteps, s.TraceStepsFrom = a.steps()
	return s
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
