package servermetrics

import (
	"fmt"
	"math"

	dto "github.com/prometheus/client_model/go"
)

// maxCount is the largest sum kept: past 2^53 a float no longer counts
// exactly, and no server has counted that many tokens or requests.
const maxCount = 1 << 53

// maxDrops bounds the things Dropped says.
const maxDrops = 16

// drops gathers what was left out of a snapshot, each said once.
type drops struct {
	said  []string
	count map[string]int
}

// sample notes a sample of a serving family left out: negative or not a
// finite number.
func (d *drops) sample(key string, m *dto.Metric) {
	if d.count == nil {
		d.count = map[string]int{}
	}
	d.count[key]++
	if d.count[key] == 1 {
		d.say(fmt.Sprintf("%s: a sample of %g is no count or level a server reports: left out", key, rawValue(m)))
	}
}

// say notes one thing left out, once.
func (d *drops) say(msg string) {
	for _, s := range d.said {
		if s == msg {
			return
		}
	}
	if len(d.said) < maxDrops {
		d.said = append(d.said, msg)
	}
}

func (d *drops) list() []string { return d.said }

// rawValue is a sample's value as written (NaN when it has none).
func rawValue(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return math.NaN()
}

// servingName reports whether key is a vLLM family the snapshot reads.
func servingName(key string) bool {
	switch key {
	case nameRunning, nameWaiting, nameKVCache, nameKVCacheOld, namePreemptions, nameGenTokens, nameSpecAccept, nameSpecDraft,
		namePromptTok, nameRequests, namePrefixQueries, namePrefixHits, namePrefixQueriesOld, namePrefixHitsOld, nameSpecDrafts:
		return true
	}
	return false
}
