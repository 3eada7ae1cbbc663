package vllmemu

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func blockWords(tag string, blocks int) []string {
	var w []string
	for i := range blocks * prefixBlock {
		w = append(w, tag+string(rune('a'+i%26)))
	}
	return w
}

// A cache of 4 blocks: A (2 blocks) and B (2 blocks) fill it; A again
// hits both of its blocks and becomes the most recent; C (2 blocks)
// evicts B, the least recently used, so B again hits nothing and evicts A.
func TestPrefixCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newPrefixCache(4 * prefixBlock)
	a, b, cc := blockWords("a", 2), blockWords("b", 2), blockWords("c", 2)
	steps := []struct {
		words       []string
		hits, evict int64
	}{{a, 0, 0}, {b, 0, 0}, {a, 32, 0}, {cc, 32, 2}, {b, 32, 4}, {cc, 64, 4}}
	for i, s := range steps {
		c.lookup(s.words)
		_, hits := c.totals()
		if hits != s.hits || c.evicted() != s.evict {
			t.Fatalf("step %d (%s…): hits %d, evicted %d; want %d and %d", i, strings.Join(s.words[:1], ""), hits, c.evicted(), s.hits, s.evict)
		}
	}
}

// The emulator's /metrics carries the evictions beside the hits.
func TestEmulatorMetricsShowEvictions(t *testing.T) {
	e := New(Config{KVCacheTokens: 2 * prefixBlock})
	defer e.Close()
	e.prefix.lookup(blockWords("a", 2))
	e.prefix.lookup(blockWords("b", 2))
	rec := httptest.NewRecorder()
	e.serveMetrics(rec)
	if v, ok := metric(rec.Body.String(), "vllmemu:prefix_cache_evicted_blocks_total"); !ok || v != 2 {
		t.Fatalf("evicted blocks %v (%v), want 2", v, ok)
	}
}
