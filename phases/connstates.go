package phases

import (
	"context"

	"github.com/profdeck/profdeck/remote"
)

// ConnEvent is the session event for a connection state: what the header
// shows and the journal keeps.
func ConnEvent(s remote.State) ConnState {
	ev := ConnState{
		Host:  s.Host,
		State: s.State,
		RTTms: float64(s.RTT.Microseconds()) / 1000,
		Retry: s.RetryIn.Seconds(),
	}
	if s.Err != nil {
		ev.Err = s.Err.Error()
	}
	return ev
}

// ForwardStates emits every connection state of h until h is closed or ctx
// ends: a change of state as a journalled KindSessionConn event, and a
// keepalive's new round-trip time on a link that stays in its state as an
// ephemeral KindSessionRTT, so hours of keepalives do not fill the journal.
// Hosts that do not report states (sim, local) return at once.
func ForwardStates(ctx context.Context, h remote.Host, em *Emitter) {
	sr, ok := h.(remote.StateReporter)
	if !ok {
		return
	}
	ch := sr.States()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case s, ok := <-ch:
			if !ok {
				return
			}
			kind := KindSessionConn
			if s.State == last {
				kind = KindSessionRTT
			}
			last = s.State
			em.Emit(ctx, kind, ConnEvent(s))
		}
	}
}
