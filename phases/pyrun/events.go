package pyrun

import (
	"context"
	"errors"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
)

// Kind is the event a script line of one type becomes: its kind and a fresh
// payload to decode the line into.
type Kind struct {
	Kind string
	New  func() any
}

// As is the Kind whose payload is a *T.
func As[T any](kind string) Kind { return Kind{kind, func() any { return new(T) }} }

// Events maps a script's lines to a phase's events.
type Events struct {
	// What names the script in the error event of a script that died
	// ("micro script").
	What string
	// ErrorKind is the phase's error event kind; a "fatal" line becomes one.
	ErrorKind string
	// Types maps a line's "type" to its event.
	Types map[string]Kind
}

// Event maps one line to the event kind and payload it becomes; ok is false
// for lines that carry no result (start, done, unknown types, fields that do
// not decode).
func (e Events) Event(l Line) (kind string, data any, ok bool) {
	if l.Type == "fatal" {
		var f Fatal
		if l.Decode(&f) != nil {
			return "", nil, false
		}
		return e.ErrorKind, &phases.ScriptError{What: e.What, Err: f.Err, Fatal: true}, true
	}
	k, found := e.Types[l.Type]
	if !found {
		return "", nil, false
	}
	v := k.New()
	if l.Decode(v) != nil {
		return "", nil, false
	}
	return k.Kind, v, true
}

// Stream runs s and emits each of its lines' events through em, after
// giving the raw line to onRaw (when set); then, when set, to after. A
// script that fails without printing a fatal line, and was not cancelled,
// gets one fatal error event. The error is pyrun.Run's.
func (e Events) Stream(ctx context.Context, s Spec, em *phases.Emitter, onRaw func(string), after func(kind string, data any)) error {
	fatal := false
	s.OnLine = func(l Line) {
		if onRaw != nil {
			onRaw(string(l.Raw))
		}
		if l.Type == "fatal" {
			fatal = true
		}
		kind, data, ok := e.Event(l)
		if !ok {
			return
		}
		em.Emit(ctx, kind, data)
		if after != nil {
			after(kind, data)
		}
	}
	err := Run(ctx, s)
	if err != nil && ctx.Err() == nil && !fatal {
		em.Emit(ctx, e.ErrorKind, phases.ScriptError{What: e.What, Err: err.Error(), Fatal: true})
	}
	return err
}

// Busy returns the *BusyError when nvidia-smi shows the GPUs in use, and nil
// otherwise (also when nvidia-smi could not be asked: a container may lack
// it).
func Busy(ctx context.Context, h remote.Host) error {
	var busy *BusyError
	if err := CheckGPUs(ctx, h); errors.As(err, &busy) {
		return busy
	}
	return nil
}
