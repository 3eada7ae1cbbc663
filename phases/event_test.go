package phases

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Every registered kind has a phase and a struct payload, and its zero
// payload goes through the journal's JSON and back into the same Go type.
func TestEveryKindRoundTrips(t *testing.T) {
	kinds := Kinds()
	if len(kinds) < 20 {
		t.Fatalf("only %d kinds registered", len(kinds))
	}
	for _, k := range kinds {
		info := registry[k]
		if info.phase == "" || info.typ.Kind() != reflect.Struct {
			t.Errorf("%s: phase %q, payload %v", k, info.phase, info.typ)
			continue
		}
		ev := New(t0, k, reflect.New(info.typ).Interface()) // a pointer is taken too
		if ev.Phase != info.phase || reflect.TypeOf(ev.Data) != info.typ {
			t.Errorf("%s: New gave phase %q, data %T", k, ev.Phase, ev.Data)
		}
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		back, err := Decode(line)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if !back.Time.Equal(t0) || back.Kind != k || back.Phase != info.phase || reflect.TypeOf(back.Data) != info.typ {
			t.Errorf("%s: decoded %+v", k, back)
		}
	}
}

func TestDecodeKeepsValuesAndReadsNewerJournals(t *testing.T) {
	ev := New(t0, KindMacroLevel, LevelResult{Concurrency: 64, Failures: map[string]int{"http_500": 2}, OutputThroughput: 1439.5})
	line, _ := json.Marshal(ev)
	back, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	if lv := back.Data.(LevelResult); lv.Concurrency != 64 || lv.Failures["http_500"] != 2 || lv.OutputThroughput != 1439.5 {
		t.Errorf("level %+v", lv)
	}
	// A kind this build does not know (a newer journal) decodes as a map.
	back, err = Decode([]byte(`{"t":"2026-11-29T12:00:00Z","phase":"macro","kind":"macro.future","data":{"x":1}}`))
	if err != nil || back.Data.(map[string]any)["x"] != 1.0 {
		t.Errorf("unknown kind: %+v, %v", back, err)
	}
	// No data is no payload.
	if back, err := Decode([]byte(`{"t":"2026-11-29T12:00:00Z","phase":"session","kind":"session.started"}`)); err != nil || back.Data != nil {
		t.Errorf("no data: %+v, %v", back, err)
	}
	for _, bad := range []string{`not json`, `{"kind":"macro.level","data":{"concurrency":"many"}}`, `{"kind":"macro.future","data":[1]}`} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) took it", bad)
		}
	}
}

func TestRegistryRules(t *testing.T) {
	if !Ephemeral(KindMacroTick) || Ephemeral(KindMacroLevel) || Ephemeral("no.such.kind") {
		t.Error("Ephemeral")
	}
	panics := func(f func()) (p bool) {
		defer func() { p = recover() != nil }()
		f()
		return false
	}
	if !panics(func() { Register(KindMacroLevel, Macro, LevelResult{}, false) }) {
		t.Error("a kind registered twice")
	}
	if !panics(func() { New(t0, "no.such.kind", Note{}) }) {
		t.Error("New took an unregistered kind")
	}
	if !panics(func() { New(t0, KindNotesNote, Marker{}) }) {
		t.Error("New took a payload of the wrong type")
	}
}

func TestEmitter(t *testing.T) {
	var nilEm *Emitter
	if !nilEm.Emit(context.Background(), KindNotesNote, Note{Text: "x"}) {
		t.Error("a nil emitter does not discard")
	}
	ch := make(chan Event) // nobody reads it
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	em := &Emitter{Out: ch, Now: func() time.Time { return t0 }}
	if em.Emit(ctx, KindNotesNote, Note{Text: "x"}) {
		t.Error("Emit blocked past its context, or claimed to send")
	}
	ch = make(chan Event, 1)
	em.Out = ch
	em.Emit(context.Background(), KindNotesNote, &Note{Text: "fp8"})
	if ev := <-ch; !ev.Time.Equal(t0) || ev.Data.(Note).Text != "fp8" || ev.Phase != Notes {
		t.Errorf("emitted %+v", ev)
	}
}

func TestStages(t *testing.T) {
	if StageIndex(StageWeights) >= StageIndex(StageKVCache) || StageIndex(StageFailed) != -1 {
		t.Error("stage order")
	}
	for stage, want := range map[string]string{StageKVCache: "KV cache", StageCUDAGraphs: "CUDA graphs",
		"cuda_graphs_done": "CUDA graphs done", "weights_loaded": "weights loaded", "vllm_version": "vLLM version"} {
		if got := StageLabel(stage); got != want {
			t.Errorf("StageLabel(%s) = %q", stage, got)
		}
	}
	if strings.Contains(StageLabel("kv_cache_size"), "_") {
		t.Error("underscore left")
	}
}
