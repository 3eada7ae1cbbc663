// Package phases holds what every phase engine shares: the typed events a phase
// emits, the registry that lets the journal decode them again, and the small
// helpers engines use to send them. Each phase lives in its own sub-package
// (load, macro, micro, nccl, profile) and imports no UI package.
package phases

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"
)

// Phase names, as used in events, the journal and the notebook.
const (
	Session = "session"
	Load    = "load"
	Macro   = "macro"
	Micro   = "micro"
	NCCL    = "nccl"
	Profile = "profile"
	Notes   = "notes"
)

// Event is one thing a phase (or the operator) reports. Data holds a typed
// payload registered under Kind; the journal stores it as JSON and decodes it
// back into the same Go type.
type Event struct {
	Time  time.Time `json:"t"`
	Phase string    `json:"phase"`
	Kind  string    `json:"kind"`
	Data  any       `json:"data,omitempty"`
}

// kindInfo is what the registry knows about one event kind.
type kindInfo struct {
	typ       reflect.Type
	phase     string
	ephemeral bool
}

var (
	regMu    sync.RWMutex
	registry = map[string]kindInfo{}
)

// Register declares an event kind: its payload type (given as a zero value of
// a struct type), the phase it belongs to, and whether it is ephemeral (shown
// live but not journalled, e.g. per-second samples that a later summary event
// carries in aggregate). Registering one kind twice panics: kinds are fixed at
// init time.
func Register(kind, phase string, proto any, ephemeral bool) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic("phases: event kind registered twice: " + kind)
	}
	t := reflect.TypeOf(proto)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	registry[kind] = kindInfo{typ: t, phase: phase, ephemeral: ephemeral}
}

// Ephemeral reports whether events of kind are kept out of the journal.
func Ephemeral(kind string) bool {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[kind].ephemeral
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New builds an event of a registered kind, stamped with t. The phase comes
// from the registry. It panics on an unregistered kind or a payload of the
// wrong type, which is a programming error.
func New(t time.Time, kind string, data any) Event {
	regMu.RLock()
	info, ok := registry[kind]
	regMu.RUnlock()
	if !ok {
		panic("phases: unregistered event kind " + kind)
	}
	dt := reflect.TypeOf(data)
	if dt != info.typ && !(dt.Kind() == reflect.Pointer && dt.Elem() == info.typ) {
		panic(fmt.Sprintf("phases: event %s wants %v, got %v", kind, info.typ, dt))
	}
	if dt.Kind() == reflect.Pointer {
		data = reflect.ValueOf(data).Elem().Interface()
	}
	return Event{Time: t, Phase: info.phase, Kind: kind, Data: data}
}

// rawEvent is the journal form of an Event before its payload is decoded.
type rawEvent struct {
	Time  time.Time       `json:"t"`
	Phase string          `json:"phase"`
	Kind  string          `json:"kind"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// PeekKind reads one journal line's phase and kind without decoding its
// payload.
func PeekKind(line []byte) (phase, kind string, err error) {
	var h struct {
		Phase string `json:"phase"`
		Kind  string `json:"kind"`
	}
	err = json.Unmarshal(line, &h)
	return h.Phase, h.Kind, err
}

// Decode parses one journal line into an Event with a typed payload. Unknown
// kinds decode with Data left as a map, so a newer journal still reads.
func Decode(line []byte) (Event, error) {
	var r rawEvent
	if err := json.Unmarshal(line, &r); err != nil {
		return Event{}, err
	}
	ev := Event{Time: r.Time, Phase: r.Phase, Kind: r.Kind}
	if len(r.Data) == 0 {
		return ev, nil
	}
	regMu.RLock()
	info, ok := registry[r.Kind]
	regMu.RUnlock()
	if !ok {
		var m map[string]any
		if err := json.Unmarshal(r.Data, &m); err != nil {
			return Event{}, fmt.Errorf("event %q: %w", r.Kind, err)
		}
		ev.Data = m
		return ev, nil
	}
	p := reflect.New(info.typ)
	dec := json.NewDecoder(bytes.NewReader(r.Data))
	dec.UseNumber() // numbers in untyped fields (a phase's parameters) stay exact
	if err := dec.Decode(p.Interface()); err != nil {
		return Event{}, fmt.Errorf("event %q: %w", r.Kind, err)
	}
	ev.Data = p.Elem().Interface()
	if ps, ok := ev.Data.(PhaseStarted); ok {
		ps.Params = ExactNumbers(ps.Params)
		ev.Data = ps
	}
	return ev, nil
}

// ExactNumbers turns the numbers of a value decoded with UseNumber into
// int64 where they are integers that fit (a seed of 19 digits stays
// exact: no round trip through float64), float64 otherwise.
func ExactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = ExactNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = ExactNumbers(e)
		}
	}
	return v
}

// Emitter sends events from an engine. It never blocks past ctx: when the
// context ends the event is dropped and false is returned.
type Emitter struct {
	Out chan<- Event
	Now func() time.Time
}

// Emit stamps data as an event of kind and sends it. A nil Emitter or nil
// channel discards the event (useful for headless runs that print instead).
func (e *Emitter) Emit(ctx context.Context, kind string, data any) bool {
	if e == nil || e.Out == nil {
		return true
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	ev := New(now(), kind, data)
	select {
	case e.Out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
