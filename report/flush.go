package report

import "time"

// Flush waits (a few seconds at most) until the events sent to the
// session's sink are journalled, so that a notebook written next holds
// them.
func (s *Session) Flush() {
	for i := 0; i < 400 && len(s.Sink()) > 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the last one taken may not be under way yet
	s.Settle(2 * time.Second)
}
