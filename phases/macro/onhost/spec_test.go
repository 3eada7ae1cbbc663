package onhost

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/remote/local"
	"github.com/profdeck/profdeck/remote/sim/vllmemu"
	"github.com/profdeck/profdeck/remote/sim/vllmemu/emutest"
)

// madeOnHost are the Config fields that do not travel: the host makes its
// own from the spec (a dialer, the scraper from MetricsURL, the writers,
// the GPU sampler), or knows it (the path: the host itself).
var madeOnHost = map[string]bool{"Dial": true, "JSONL": true, "Scraper": true, "GPU": true, "Host": true, "Log": true, "Path": true, "Observe": true}

// Every setting of a sweep reaches the host: a field added to macro.Config
// must be carried by Spec (or named in madeOnHost), or a sweep on the
// host would quietly run without it.
func TestSpecCarriesEveryConfigField(t *testing.T) {
	ct, st := reflect.TypeOf(macro.Config{}), reflect.TypeOf(Spec{})
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		if !f.IsExported() || madeOnHost[f.Name] {
			continue
		}
		sf, ok := st.FieldByName(f.Name)
		if !ok || sf.Type != f.Type {
			t.Errorf("macro.Config.%s (%v) does not travel to the host: add it to Spec, specOf and config", f.Name, f.Type)
		}
	}
	// And each travels both ways with its value.
	in := reflect.New(st).Elem()
	for i := 0; i < st.NumField(); i++ {
		setSome(t, in.Field(i), st.Field(i).Name)
	}
	spec := in.Interface().(Spec)
	back := specOf(spec.config(), spec.MetricsURL)
	back.JSONL, back.GPU, back.HostName = spec.JSONL, spec.GPU, spec.HostName // not Config settings
	back.AwaitStart, back.Histograms = spec.AwaitStart, spec.Histograms       // the load agents' wire
	if !reflect.DeepEqual(back, spec) {
		t.Errorf("spec → config → spec changed it:\n%+v\n%+v", spec, back)
	}
}

// setSome gives v a value that is not its zero.
func setSome(t *testing.T, v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(len(name)))
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.ValueOf([]int{1, 2}))
	case reflect.Struct:
		switch v.Type() {
		case reflect.TypeOf(macro.Limits{}):
			v.Set(reflect.ValueOf(macro.Limits{MaxNumSeqs: 3, Source: "x", Looked: true}))
		case reflect.TypeOf(macro.Percentiles{}):
			v.Set(reflect.ValueOf(macro.Percentiles{Metrics: []string{"ttft"}, Of: []float64{95}}))
		default:
			t.Fatalf("Spec.%s: no test value for %v", name, v.Type())
		}
	case reflect.Pointer:
		if v.Type() != reflect.TypeOf(&phases.Deployment{}) {
			t.Fatalf("Spec.%s: no test value for %v", name, v.Type())
		}
		v.Set(reflect.ValueOf(&phases.Deployment{TP: 8, Nodes: 1, GPUs: 8, Source: "x"}))
	default:
		t.Fatalf("Spec.%s: no test value for %v", name, v.Kind())
	}
}

// A result longer than a line comes back in parts, whole.
func TestLongResultInParts(t *testing.T) {
	old := partSize
	partSize = 512
	defer func() { partSize = old }()
	_, url := emutest.Start(t, vllmemu.Config{StepTime: time.Millisecond, StepPerSeq: 1})
	sw, err := New(macro.Config{URL: url, API: macro.APICompletions, Concurrency: []int{1, 2, 4}, Requests: 4, Warmup: 1,
		InputLen: 8, OutputLen: 8, Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent},
		Options{Host: inProc{local.New()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if len(res.Levels) != 3 || res.Model != "test/model" || res.Stopped != "" || len(b) < 4*partSize {
		t.Fatalf("result of %d bytes: %d levels, model %q, stopped %q", len(b), len(res.Levels), res.Model, res.Stopped)
	}
}

// inProc is this machine as a simulated host: the agent runs in process.
type inProc struct{ remote.Host }

func (inProc) Simulated() bool { return true }

// An SLO search run by the load generator on the host comes back with its
// search object: every level of the ladder met a TPOT no emulator step
// reaches, so the limit is above the ladder's top.
func TestSearchOnHost(t *testing.T) {
	_, url := emutest.Start(t, vllmemu.Config{StepTime: time.Millisecond, StepPerSeq: 1})
	sw, err := New(macro.Config{URL: url, API: macro.APICompletions, Concurrency: []int{1, 2, 4}, Requests: 40, InputLen: 8, OutputLen: 4,
		Timeout: time.Minute, ClientBoundLag: 10 * time.Millisecond, Repeat: 1, LatencyFrom: macro.LatencySent,
		SLO: "tpot=1s", Search: phases.SearchConcurrency, SearchTolerance: 0.05}, Options{Host: inProc{local.New()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Search; s == nil || s.StoppedBecause != phases.StopLadderTop || s.Answer != 4 || s.Upper != nil || s.Runs != 3 || len(res.Levels) != 3 {
		t.Fatalf("search %+v, %d levels", s, len(res.Levels))
	}
}
