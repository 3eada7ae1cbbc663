package report

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/profdeck/profdeck/phases"
)

func TestSplitLaunch(t *testing.T) {
	got := splitLaunch(`vllm serve m --speculative-config '{"method": "ngram", "num_speculative_tokens": 3}' --x "a b" c\ d`)
	want := []string{"vllm", "serve", "m", "--speculative-config", `{"method": "ngram", "num_speculative_tokens": 3}`, "--x", "a b", "c d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestLaunchChanges: args replace the same flags (either spelling) and add
// new ones; a whole launch line is compared flag by flag, a flag it drops
// said gone.
func TestLaunchChanges(t *testing.T) {
	base := "vllm serve m --max-num-seqs 128 --enable-chunked-prefill --tensor_parallel_size=2 --port 8000"
	ch, next := launchChanges(base, phases.VariantSpec{Args: []string{"--max_num_seqs=64", "--enable-expert-parallel", "--tensor-parallel-size", "2"}})
	var got []string
	for _, c := range ch {
		got = append(got, c.String())
	}
	want := []string{"--enable-expert-parallel not set → set", "--max-num-seqs 128 → 64"}
	if !reflect.DeepEqual(got, want) || next["port"] != "8000" {
		t.Errorf("args: %q, want %q (next %v)", got, want, next)
	}
	ch, _ = launchChanges(base, phases.VariantSpec{Launch: "vllm serve m --max-num-seqs 128 --tensor-parallel-size 4 --port 8000"})
	got = nil
	for _, c := range ch {
		got = append(got, c.String())
	}
	want = []string{"--enable-chunked-prefill set → not set", "--tensor-parallel-size 2 → 4"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("launch: %q, want %q", got, want)
	}
}

func TestAcceptLength(t *testing.T) {
	// 0.7 a draft, 3 drafts: 1 + 0.7 + 0.49 + 0.343 = 2.533.
	if l := acceptLength(0.7, 3); math.Abs(l-2.533) > 1e-9 {
		t.Errorf("acceptLength(0.7, 3) = %v", l)
	}
	if a := acceptRate(2.533, 3); math.Abs(a-0.7) > 1e-6 {
		t.Errorf("acceptRate(2.533, 3) = %v", a)
	}
	if l := acceptLength(1, 4); l != 5 {
		t.Errorf("acceptLength(1, 4) = %v", l)
	}
}

// FuzzPredictVariant: any launch line, args and a speculative config
// never panic the parsers or the models, and every figure predicted is a
// positive finite number.
func FuzzPredictVariant(f *testing.F) {
	f.Add("vllm serve m --max-num-seqs 64", "--max-num-seqs=128", `{"method":"ngram","num_speculative_tokens":3}`)
	f.Add(`a --x '{"unclosed`, "--tensor-parallel-size", `{"num_speculative_tokens":1e308,"acceptance_rate":1}`)
	f.Add("--enable-chunked-prefill=False --max-num-batched-tokens -5", "--data-parallel-size=NaN", "null")
	f.Fuzz(func(t *testing.T, launch, arg, spec string) {
		b := synthBaseline()
		p := PredictVariant(b, launch, phases.VariantSpec{Name: "f", Args: append(strings.Fields(arg), "--speculative-config", spec)})
		for _, v := range []phases.Predicted{p.PlateauTokS, p.PlateauC, p.TPOTC1Ms, p.TPOTPlateauMs, p.SLOCapacity} {
			if v.OK && (v.Value <= 0 || math.IsNaN(v.Value) || math.IsInf(v.Value, 0)) {
				t.Fatalf("%+v", v)
			}
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatal(err)
		}
	})
}

// TestVariantEvents: the baseline's events are those outside any variant.
func TestVariantEvents(t *testing.T) {
	ev := func(d any) phases.Event { return phases.Event{Data: d} }
	events := []phases.Event{
		ev(phases.LevelResult{Concurrency: 1}),
		ev(phases.VariantStarted{Spec: phases.VariantSpec{Name: "a"}}), ev(phases.LevelResult{Concurrency: 2}), ev(phases.VariantFinished{Name: "a"}),
		ev(phases.LevelResult{Concurrency: 3}),
		ev(phases.VariantStarted{Spec: phases.VariantSpec{Name: "b"}}), ev(phases.LevelResult{Concurrency: 4}),
	}
	by := VariantEvents(events)
	c := func(name string) []int {
		var out []int
		for _, e := range by[name] {
			out = append(out, e.Data.(phases.LevelResult).Concurrency)
		}
		return out
	}
	if !reflect.DeepEqual(c(phases.Baseline), []int{1, 3}) || !reflect.DeepEqual(c("a"), []int{2}) || !reflect.DeepEqual(c("b"), []int{4}) {
		t.Errorf("baseline %v, a %v, b %v", c(phases.Baseline), c("a"), c("b"))
	}
}

// TestMeasureVariant: the cap64 variant's own journal: plateau C=128 at
// 2838 tok/s, mean TPOT 4.19 ms at C=1 and 20.32 ms at the plateau,
// 0.218 J a token there, no SLO search.
func TestMeasureVariant(t *testing.T) {
	m := MeasureVariant(h200Journal(t, "cap64"))
	if m.PlateauC != 128 || math.Abs(m.PlateauTokS-2838.26) > 0.01 || math.Abs(m.TPOTC1Ms-4.188) > 0.001 ||
		math.Abs(m.TPOTPlateauMs-20.3215) > 0.001 || math.Abs(m.JPerToken-0.2183) > 0.0001 || m.Has[KeySLOCapacity] || m.Verdict != "max_num_seqs" {
		t.Errorf("%+v", m)
	}
	for _, k := range []string{KeyPlateauC, KeyPlateauTokS, KeyTPOTC1, KeyTPOTPlateau, KeyJPerToken} {
		if !m.Has[k] {
			t.Errorf("%s not measured", k)
		}
	}
	m = MeasureVariant([]phases.Event{{Data: phases.Search{Mode: phases.SearchConcurrency, Answer: 24, Done: true}}})
	if m.SLOCapacity != 24 || !m.Has[KeySLOCapacity] || m.Has[KeyPlateauC] {
		t.Errorf("search alone: %+v", m)
	}
}

func TestPredictionError(t *testing.T) {
	p := phases.Predicted{Value: 80, OK: true}
	if pct, ok := PredictionError(p, 100, true); !ok || pct != 25 {
		t.Errorf("(100 − 80)/80: %v %v", pct, ok)
	}
	for _, c := range []struct {
		p  phases.Predicted
		ok bool
	}{{phases.Predicted{Value: 80}, true}, {p, false}, {phases.Predicted{OK: true}, true}} {
		if _, ok := PredictionError(c.p, 100, c.ok); ok {
			t.Errorf("%+v measured %v: an error", c.p, c.ok)
		}
	}
}
