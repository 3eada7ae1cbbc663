package onhost

import (
	"sync"
	"time"

	"github.com/profdeck/profdeck/phases/macro/hdrsec"
)

// BatchEvery is how often an agent sending histograms sends what it
// measured since its last batch.
var BatchEvery = time.Second

// batches sends t's batch up every BatchEvery; the returned stop sends
// the last one and returns once it is sent.
func batches(t *hdrsec.Tally, o *wireOut) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	send := func() {
		if b, ok, err := t.Flush(); err == nil && ok {
			o.send(up{Hist: &b})
		}
	}
	wg.Go(func() {
		tick := time.NewTicker(BatchEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				send()
				return
			case <-tick.C:
				send()
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}
