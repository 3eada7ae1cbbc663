package report

import (
	"context"
	"time"

	"github.com/profdeck/profdeck/phases"
)

// Sync waits until the events sent to the session's sink so far are
// journalled (a barrier through the sink, released in order), and until
// no Record call is under way (a note), each for a few seconds at most,
// so that a notebook written next holds them. It reports whether both
// were through in time.
func (s *Session) Sync() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ok := phases.Sync(ctx, s.in, s.done)
	return s.Settle(2*time.Second) && ok
}
