package phases

import (
	"context"
	"time"
)

// KindSessionBarrier is the one barrier of an event stream: sent into a channel
// after other events, it is released by whatever reads that channel once
// every event before it is handled (the session once they are journalled,
// the campaign runner once its fold has seen them). It is never journalled
// and never passed on.
const KindSessionBarrier = "session.barrier"

// Barrier is a KindSessionBarrier event's data.
type Barrier struct{ done chan struct{} }

func init() { Register(KindSessionBarrier, Session, Barrier{}, true) }

// Release says every event sent before the barrier is handled.
func (b Barrier) Release() {
	if b.done != nil {
		close(b.done)
	}
}

// Sync sends a barrier into out and waits until its reader releases it,
// ctx ends or stopped is closed (the reader is gone); it reports whether
// the barrier was released.
func Sync(ctx context.Context, out chan<- Event, stopped <-chan struct{}) bool {
	b := Barrier{done: make(chan struct{})}
	select {
	case out <- New(time.Now(), KindSessionBarrier, b):
	case <-ctx.Done():
		return false
	case <-stopped:
		return false
	}
	select {
	case <-b.done:
		return true
	case <-ctx.Done():
		return false
	case <-stopped:
		return false
	}
}
